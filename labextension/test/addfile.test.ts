import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { KernelBoardConnection, RequestTimeout } from '../src/connection';
import {
  SidebarModel,
  addOutcome,
  addRequest,
  inferAddKind,
  parseCommMessage
} from '../src/model';
import { kernelRelativePath } from '../src/paths';
import { FakeKernel } from './fakes';
import { board } from './fixtures';

describe('inferAddKind', () => {
  it.each([
    ['deps.zip', 'archive'],
    ['lib.jar', 'archive'],
    ['data.tar', 'archive'],
    ['data.tar.gz', 'archive'],
    ['DATA.TGZ', 'archive'],
    ['helpers.py', 'pyfile'],
    ['pkg-1.0.egg', 'pyfile'],
    ['lookup.csv', 'file'],
    ['notes.gz', 'file'],
    ['README', 'file'],
    ['script.pyc', 'file']
  ])('%s -> %s', (name, kind) => {
    expect(inferAddKind(name)).toBe(kind);
  });
});

describe('kernelRelativePath', () => {
  it('is relative to the notebook directory', () => {
    expect(kernelRelativePath('nb.ipynb', 'lookup.csv')).toBe('lookup.csv');
    expect(kernelRelativePath('nb.ipynb', 'data/lookup.csv')).toBe(
      'data/lookup.csv'
    );
    expect(kernelRelativePath('work/nb.ipynb', 'work/data/x.csv')).toBe(
      'data/x.csv'
    );
    expect(kernelRelativePath('work/sub/nb.ipynb', 'other/x.csv')).toBe(
      '../../other/x.csv'
    );
    expect(kernelRelativePath('/work/nb.ipynb', '/x.csv')).toBe('../x.csv');
  });
});

describe('add requests and replies', () => {
  it('builds the add request, with an alias only when given', () => {
    expect(addRequest('a', 'file', 'x.csv', 'r1')).toEqual({
      version: 1,
      action: 'add',
      request_id: 'r1',
      session: 'a',
      kind: 'file',
      path: 'x.csv'
    });
    expect(addRequest('a', 'archive', 'd.zip', 'r2', 'deps')).toMatchObject({
      alias: 'deps'
    });
  });

  it('parses add replies on the comm', () => {
    const ok = {
      type: 'reply',
      version: 1,
      request_id: 'r1',
      action: 'add',
      status: 'ok',
      added: true,
      artifact: { name: 'x.csv', kind: 'file', size: 3, path: '/d/x.csv' }
    };
    expect(parseCommMessage(ok)).toEqual(ok);
  });

  it('turns replies into messages', () => {
    const artifact = {
      name: 'lookup.csv',
      kind: 'file' as const,
      size: 1,
      path: '/d/lookup.csv'
    };
    const base = {
      version: 1,
      request_id: 'r',
      action: 'add' as const,
      status: 'ok' as const
    };
    expect(
      addOutcome({ ...base, added: true, artifact }, 'lookup.csv', 'a')
    ).toEqual({
      level: 'success',
      message: "Added file 'lookup.csv' to session 'a'."
    });
    expect(
      addOutcome({ ...base, added: true, artifact }, 'lookup_v2.csv', 'a')
    ).toEqual({
      level: 'success',
      message: "Added file 'lookup_v2.csv' to session 'a' as 'lookup.csv'."
    });
    expect(
      addOutcome({ ...base, added: false, artifact }, 'lookup.csv', 'a')
    ).toEqual({
      level: 'info',
      message: "'lookup.csv' is already in session 'a' with the same content."
    });
    expect(
      addOutcome(
        {
          version: 1,
          request_id: 'r',
          status: 'error',
          error: { code: 'not_found', message: 'No such file:\n x.csv' }
        },
        'x.csv',
        'a'
      )
    ).toEqual({ level: 'error', message: 'No such file: x.csv' });
  });
});

async function subscribed() {
  const kernel = new FakeKernel();
  const model = new SidebarModel();
  model.reset('Python 3');
  const connection = new KernelBoardConnection(kernel as any, model, {
    addTimeoutMs: 120000
  });
  const started = connection.start();
  kernel.futures[0].reply({
    version: 1,
    status: 'ok',
    action: 'list',
    request_id: null,
    board: board()
  });
  await started;
  return { kernel, model, connection, comm: kernel.comms[0] };
}

describe('KernelBoardConnection.addToSession', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the add on the comm and resolves with the reply of its request_id', async () => {
    const { kernel, model, connection, comm } = await subscribed();
    expect(connection.isSubscribed).toBe(true);
    const first = connection.addToSession('etl', 'file', 'data/x.csv');
    const second = connection.addToSession('etl', 'archive', 'd.zip', 'deps');
    expect(kernel.futures).toHaveLength(1); // nothing on the control channel
    expect(comm.sent).toHaveLength(2);
    const [r1, r2] = comm.sent;
    expect(r1).toMatchObject({
      version: 1,
      action: 'add',
      session: 'etl',
      kind: 'file',
      path: 'data/x.csv'
    });
    expect(r1.alias).toBeUndefined();
    expect(r2).toMatchObject({ kind: 'archive', alias: 'deps' });
    expect(r1.request_id).not.toBe(r2.request_id);

    // answers out of order; an unrelated reply and a board are not theirs
    comm.push({
      type: 'reply',
      version: 1,
      request_id: 'someone-else',
      action: 'add',
      status: 'ok',
      added: true
    });
    comm.push({
      type: 'reply',
      version: 1,
      request_id: r2.request_id,
      status: 'error',
      error: { code: 'not_found', message: 'No such file: d.zip' }
    });
    comm.push({ version: 1, type: 'board', board: board({ seq: 5 }) });
    comm.push({
      type: 'reply',
      version: 1,
      request_id: r1.request_id,
      action: 'add',
      status: 'ok',
      added: false,
      artifact: { name: 'x.csv', kind: 'file', size: 3, path: '/d/x.csv' }
    });
    const reply1 = await first;
    const reply2 = await second;
    expect(reply1).toMatchObject({ status: 'ok', added: false });
    expect(reply2).toMatchObject({
      status: 'error',
      error: { message: 'No such file: d.zip' }
    });
    // the add's error went to its caller, not to the sidebar
    expect(model.error).toBe('');
    expect(model.board?.seq).toBe(5);
  });

  it('rejects after 120 s without an answer', async () => {
    const { connection, comm } = await subscribed();
    const added = connection.addToSession('etl', 'file', 'x.csv');
    const settled = added.then(
      () => null,
      error => error
    );
    vi.advanceTimersByTime(119999);
    comm.push({ version: 1, type: 'board', board: board({ seq: 2 }) });
    vi.advanceTimersByTime(1);
    const error = await settled;
    expect(error).toBeInstanceOf(RequestTimeout);
    expect(error.message).toBe('The kernel did not answer within 120 s.');
    // a late answer is ignored
    comm.push({
      type: 'reply',
      version: 1,
      request_id: comm.sent[0].request_id,
      action: 'add',
      status: 'ok',
      added: true
    });
  });

  it('rejects without an open comm, and pending adds on dispose', async () => {
    const kernel = new FakeKernel();
    const model = new SidebarModel();
    const idle = new KernelBoardConnection(kernel as any, model);
    await expect(idle.addToSession('etl', 'file', 'x.csv')).rejects.toThrow(
      /Not connected/
    );

    const { connection } = await subscribed();
    const added = connection.addToSession('etl', 'file', 'x.csv');
    connection.dispose();
    await expect(added).rejects.toThrow(/closed/);
    expect(connection.isSubscribed).toBe(false);
  });

  it('rejects pending adds when the kernel closes the comm', async () => {
    const { connection, comm } = await subscribed();
    const added = connection.addToSession('etl', 'file', 'x.csv');
    comm.onClose({});
    await expect(added).rejects.toThrow(/closed the Spark sessions comm/);
  });
});

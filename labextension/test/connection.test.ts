import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import {
  KERNEL_INFO_TIMEOUT_MS,
  KernelBoardConnection
} from '../src/connection';
import { RequestTimeout } from '../src/controlChannel';
import { COMM_TARGET, CONTROL_REQUEST } from '../src/messages';
import { SidebarModel } from '../src/model';
import {
  FakeFuture,
  FakeKernel,
  LOADED_KERNEL_INFO,
  PLAIN_KERNEL_INFO
} from './fakes';
import type { Board } from '../src/protocol';
import { board, group, query } from './fixtures';

function setup() {
  const kernel = new FakeKernel();
  const model = new SidebarModel();
  model.reset('Python 3');
  const connection = new KernelBoardConnection(kernel as any, model, {
    probeTimeoutMs: 3000,
    cancelTimeoutMs: 5000
  });
  return { kernel, model, connection };
}

/** The kernel answers a `list` request (the probe, a refresh) with `answer`. */
function replyList(future: FakeFuture, answer: Board): void {
  future.reply({
    version: 1,
    status: 'ok',
    action: 'list',
    request_id: null,
    board: answer
  });
}

async function flush(): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await Promise.resolve();
  }
}

describe('KernelBoardConnection', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks kernel_info on the control channel, then lists and subscribes', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    expect(kernel.infoRequests).toHaveLength(1);
    const info = kernel.infoRequests[0];
    expect(info.msg.channel).toBe('control');
    expect(info.msg.header.msg_type).toBe('kernel_info_request');
    expect(kernel.futures).toHaveLength(0); // nothing custom before the marker
    await flush();
    expect(kernel.futures).toHaveLength(1);
    const probe = kernel.futures[0];
    expect(probe.msg.channel).toBe('control');
    expect(probe.msg.header.msg_type).toBe(CONTROL_REQUEST);
    expect(probe.msg.header.session).toBe('client-1');
    expect(probe.msg.content).toMatchObject({ version: 1, action: 'list' });

    replyList(probe, board());
    await started;
    expect(model.status).toBe('ready');
    expect(kernel.comms).toHaveLength(1);
    const comm = kernel.comms[0];
    expect(comm.targetName).toBe(COMM_TARGET);
    expect(comm.opened[0]).toMatchObject({ version: 1, action: 'subscribe' });

    comm.push({
      version: 1,
      type: 'board',
      board: board({ seq: 2, groups: [group({ state: 'succeeded' })] })
    });
    expect(model.board?.seq).toBe(2);
    expect(model.board?.groups[0].state).toBe('succeeded');
  });

  it('applies board patches, and asks for the whole board after a missed one', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    replyList(kernel.futures[0], board({ seq: 1 }));
    await started;
    const comm = kernel.comms[0];
    const patch = {
      version: 1,
      type: 'board_patch',
      updated_at: 1001,
      groups: [group({ state: 'succeeded' })],
      removed_groups: [],
      other_running_jobs: 0,
      error: ''
    };
    comm.push({ ...patch, seq: 2, base_seq: 1 });
    expect(model.board?.seq).toBe(2);
    expect(model.board?.groups[0].state).toBe('succeeded');

    comm.push({ ...patch, seq: 9, base_seq: 7 }); // 3..7 never arrived
    expect(model.board?.seq).toBe(2);
    expect(kernel.futures).toHaveLength(2);
    const refresh = kernel.futures[1];
    expect(refresh.msg.channel).toBe('control');
    expect(refresh.msg.content).toMatchObject({ action: 'list' });
    replyList(refresh, board({ seq: 9, groups: [] }));
    await flush();
    expect(model.board?.seq).toBe(9);
    expect(model.board?.groups).toEqual([]);
  });

  it('opens the comm on its kernel subshell once that is up', async () => {
    const { kernel, model, connection } = setup();
    let subshellUp!: () => void;
    const subshellStarted = new Promise<void>(resolve => {
      subshellUp = resolve;
    });
    Object.assign(kernel, {
      info: Promise.resolve({}),
      supportsSubshells: true
    });
    const createComm = kernel.createComm.bind(kernel);
    kernel.createComm = (target: string) =>
      Object.assign(createComm(target), {
        subshellStarted,
        commsOverSubshells: 'perCommTarget'
      });
    const started = connection.start();
    await flush();
    replyList(kernel.futures[0], board());
    await started;
    await flush();
    expect(kernel.comms[0].opened).toHaveLength(0);
    subshellUp();
    await flush();
    expect(kernel.comms[0].opened).toHaveLength(1);
    expect(model.status).toBe('ready');
  });

  it("is 'not-loaded' at once when kernel_info lacks the marker, sending nothing else", async () => {
    const { kernel, model, connection } = setup();
    kernel.kernelInfo = PLAIN_KERNEL_INFO;
    await connection.start(); // no timer had to run
    expect(model.status).toBe('not-loaded');
    expect(kernel.futures).toHaveLength(0); // no spark_sessions_request
    expect(kernel.comms).toHaveLength(0);
  });

  it("is 'not-loaded' when kernel_info gets no answer within its timeout", async () => {
    const { kernel, model, connection } = setup();
    kernel.kernelInfo = null; // not ipykernel: no kernel_info on control
    const started = connection.start();
    vi.advanceTimersByTime(KERNEL_INFO_TIMEOUT_MS - 1);
    await flush();
    expect(model.status).toBe('connecting');
    vi.advanceTimersByTime(1);
    await started;
    expect(KERNEL_INFO_TIMEOUT_MS).toBeLessThanOrEqual(1000);
    expect(model.status).toBe('not-loaded');
    expect(kernel.infoRequests[0].disposed).toBe(true);
    expect(kernel.futures).toHaveLength(0);
  });

  it('asks kernel_info again after each cell while not loaded, and connects once loaded', async () => {
    const { kernel, model, connection } = setup();
    kernel.kernelInfo = PLAIN_KERNEL_INFO;
    await connection.start();
    // the idle that follows our own control request is no cell end
    kernel.emitStatus('idle', 'kernel_info_request');
    expect(kernel.infoRequests).toHaveLength(1);
    kernel.emitStatus('idle', 'execute_request'); // a cell without %load_ext
    await flush();
    expect(kernel.infoRequests).toHaveLength(2);
    expect(model.status).toBe('not-loaded');

    kernel.kernelInfo = LOADED_KERNEL_INFO; // the next cell was %load_ext
    kernel.emitStatus('idle', 'execute_request');
    await flush();
    expect(kernel.infoRequests).toHaveLength(3);
    expect(kernel.futures).toHaveLength(1);
    expect(kernel.futures[0].msg.header.msg_type).toBe(CONTROL_REQUEST);
    replyList(kernel.futures[0], board());
    await flush();
    expect(model.status).toBe('ready');
    kernel.emitStatus('idle', 'execute_request'); // connected: no more probes
    expect(kernel.infoRequests).toHaveLength(3);
  });

  it('probes once more when a cell ends while a probe is under way', async () => {
    const { kernel, model, connection } = setup();
    kernel.kernelInfo = null;
    const started = connection.start();
    kernel.kernelInfo = LOADED_KERNEL_INFO; // %load_ext ran meanwhile
    kernel.emitStatus('idle', 'execute_request');
    expect(kernel.infoRequests).toHaveLength(1); // one probe at a time
    vi.advanceTimersByTime(KERNEL_INFO_TIMEOUT_MS);
    await flush();
    expect(kernel.infoRequests).toHaveLength(2);
    replyList(kernel.futures[0], board());
    await started;
    expect(model.status).toBe('ready');
  });

  it('shows a list probe that gets no answer as an error, not as not-loaded', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    vi.advanceTimersByTime(3000);
    await started;
    expect(model.status).toBe('error');
    expect(model.error).toBe('The kernel did not answer within 3 s.');
    expect(kernel.futures[0].disposed).toBe(true);
  });

  it('shows an error reply to the probe as an error', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    kernel.futures[0].reply({
      version: 1,
      status: 'error',
      request_id: null,
      error: {
        code: 'unsupported_version',
        message: 'Unsupported protocol version 1.'
      }
    });
    await started;
    expect(model.status).toBe('error');
    expect(model.error).toBe('Unsupported protocol version 1.');
  });

  it('cancels on the control channel and keeps the overlay until the board says otherwise', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    replyList(kernel.futures[0], board());
    await started;

    const cancelled = connection.cancel({ groups: ['etl:12'] });
    expect(model.displayState(model.board!.groups[0])).toBe('cancelling');
    const request = kernel.futures[1];
    expect(request.msg.channel).toBe('control');
    expect(request.msg.content).toMatchObject({
      version: 1,
      action: 'cancel',
      groups: ['etl:12']
    });
    request.reply({
      version: 1,
      status: 'ok',
      action: 'cancel',
      request_id: request.msg.content.request_id,
      cancelling: ['etl:12'],
      messages: []
    });
    const reply = await cancelled;
    expect(reply?.status).toBe('ok');
    expect(model.displayState(model.board!.groups[0])).toBe('cancelling');

    kernel.comms[0].push({
      version: 1,
      type: 'board',
      board: board({ seq: 3, groups: [group({ state: 'cancelled' })] })
    });
    expect(model.displayState(model.board!.groups[0])).toBe('cancelled');
  });

  it('cancels a session and shows an unanswered cancel as an error', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    replyList(kernel.futures[0], board());
    await started;

    const cancelled = connection.cancel({ session: 'etl' });
    expect(kernel.futures[1].msg.content).toMatchObject({
      action: 'cancel',
      session: 'etl'
    });
    expect(model.displayState(model.board!.groups[0])).toBe('cancelling');
    vi.advanceTimersByTime(5000);
    expect(await cancelled).toBeNull();
    expect(model.displayState(model.board!.groups[0])).toBe('running');
    expect(model.error).toMatch(/^Cancel failed: /);
  });

  it('stops a query on the control channel, shows an unanswered stop as an error', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    const rates = query();
    replyList(kernel.futures[0], board({ queries: [rates] }));
    await started;

    const stopped = connection.stopQuery(rates.run_id);
    expect(model.queryState(model.board!.queries[0])).toBe('stopping');
    const request = kernel.futures[1];
    expect(request.msg.channel).toBe('control');
    expect(request.msg.header.msg_type).toBe(CONTROL_REQUEST);
    expect(request.msg.content).toEqual({
      version: 1,
      action: 'stop_query',
      query: rates.run_id,
      source: 'sidebar',
      request_id: expect.any(String)
    });
    vi.advanceTimersByTime(5000);
    expect(await stopped).toBeNull();
    expect(model.queryState(model.board!.queries[0])).toBe('active');
    expect(model.error).toMatch(/^Stop failed: /);
  });

  it('closes the comm on dispose and ignores later pushes', async () => {
    const { kernel, model, connection } = setup();
    const started = connection.start();
    await flush();
    replyList(kernel.futures[0], board());
    await started;
    const comm = kernel.comms[0];
    connection.dispose();
    expect(comm.closed).toBe(true);
    comm.push({ version: 1, type: 'board', board: board({ seq: 9 }) });
    expect(model.board?.seq).toBe(1);
    expect(kernel.iopubMessage.slots).toHaveLength(0);
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
  await flush();
  replyList(kernel.futures[0], board());
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

import { describe, expect, it } from 'vitest';

import {
  COMM_TARGET,
  CONTROL_REPLY,
  CONTROL_REQUEST,
  PROTOCOL_VERSION,
  STATUS_UNTRACKED_TYPES,
  addRequest,
  applyBoardPatch,
  cancelRequest,
  parseCommMessage,
  stopQueryRequest,
  withStatusUntracked
} from '../src/messages';
import type { BoardPatchMessage } from '../src/protocol';
import schema from '../../jupyter_spark_sessions/protocol.schema.json';
import { board, group, query } from './fixtures';

describe('constants', () => {
  it("are the schema's", () => {
    expect(PROTOCOL_VERSION).toBe(schema.$defs.Version.const);
    expect(CONTROL_REQUEST).toBe(schema.$defs.ControlRequestType.const);
    expect(CONTROL_REPLY).toBe(schema.$defs.ControlReplyType.const);
    expect(COMM_TARGET).toBe(schema.$defs.CommTarget.const);
  });
});

describe('protocol helpers', () => {
  it('parses board pushes and replies, rejects anything else', () => {
    const push = parseCommMessage({
      version: 1,
      type: 'board',
      board: board()
    });
    expect(push?.type).toBe('board');
    const reply = parseCommMessage({
      type: 'reply',
      version: 1,
      status: 'ok',
      action: 'subscribe',
      board: board()
    });
    expect(reply?.type).toBe('reply');
    expect(parseCommMessage({ type: 'board', board: { seq: 'x' } })).toBeNull();
    expect(parseCommMessage('hello')).toBeNull();
    expect(parseCommMessage({ type: 'reply', status: 'error' })).toBeNull();
  });

  it('builds cancel requests with exactly one target', () => {
    expect(cancelRequest({ groups: ['a:1'] }, 'r1')).toEqual({
      version: 1,
      action: 'cancel',
      groups: ['a:1'],
      source: 'sidebar',
      request_id: 'r1'
    });
    expect(cancelRequest({ session: 'a' }, undefined, 'cell')).toEqual({
      version: 1,
      action: 'cancel',
      session: 'a',
      source: 'cell'
    });
  });
});

describe('stop_query requests', () => {
  it('names the query by its run id, from the sidebar unless told', () => {
    expect(stopQueryRequest('run-1', 'r1')).toEqual({
      version: 1,
      action: 'stop_query',
      query: 'run-1',
      source: 'sidebar',
      request_id: 'r1'
    });
    expect(stopQueryRequest('rates', undefined, 'panel')).toEqual({
      version: 1,
      action: 'stop_query',
      query: 'rates',
      source: 'panel'
    });
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
});

describe('board patches', () => {
  const a = group({ id: 'etl:1', execution_count: 1 });
  const b = group({ id: 'etl:2', execution_count: 2 });
  const c = group({ id: 'etl:3', execution_count: 3 });
  const base = board({ seq: 4, groups: [a, b] });

  function patch(partial: Partial<BoardPatchMessage>): BoardPatchMessage {
    return {
      version: PROTOCOL_VERSION,
      type: 'board_patch',
      seq: 5,
      base_seq: 4,
      updated_at: 2000,
      groups: [],
      removed_groups: [],
      other_running_jobs: 0,
      error: '',
      ...partial
    };
  }

  it('replaces changed groups in place, appends new ones, drops removed ones', () => {
    const done = { ...b, state: 'succeeded' as const };
    const next = applyBoardPatch(
      base,
      patch({ groups: [done, c], removed_groups: ['etl:1'] })
    );
    expect(next?.groups).toEqual([done, c]);
    expect(next?.seq).toBe(5);
    expect(next?.updated_at).toBe(2000);
    expect(next?.sessions).toBe(base.sessions);
  });

  it('follows an explicit order and new sessions', () => {
    const next = applyBoardPatch(
      base,
      patch({ groups: [c], order: ['etl:3', 'etl:1', 'etl:2'], sessions: [] })
    );
    expect(next?.groups.map(g => g.id)).toEqual(['etl:3', 'etl:1', 'etl:2']);
    expect(next?.sessions).toEqual([]);
  });

  it("takes a patch's queries whole, and keeps the board's when it has none", () => {
    const running = query();
    const withQuery = { ...base, queries: [running] };
    const kept = applyBoardPatch(withQuery, patch({ groups: [c] }));
    expect(kept?.queries).toEqual([running]);

    const stopping = query({ state: 'stopping', stop_source: 'sidebar' });
    const other = query({ id: 'q2', run_id: 'r2', name: '', session: 'b' });
    const replaced = applyBoardPatch(
      withQuery,
      patch({ queries: [stopping, other] })
    );
    expect(replaced?.queries).toEqual([stopping, other]);
    expect(replaced?.groups).toEqual(base.groups);

    const emptied = applyBoardPatch(withQuery, patch({ queries: [] }));
    expect(emptied?.queries).toEqual([]);
  });

  it('refuses a patch made on another board', () => {
    expect(applyBoardPatch(base, patch({ base_seq: 3 }))).toBeNull();
  });

  it('is recognised as a comm message', () => {
    const message = patch({ groups: [c] });
    expect(parseCommMessage(message)).toEqual(message);
    expect(parseCommMessage({ ...message, removed_groups: 'x' })).toBeNull();
  });
});

describe("the kernel's status follows its main shell (issue 39, 8)", () => {
  const server = JSON.stringify(['comm_info_request', 'kernel_info_request']);

  it("adds the sidebar's requests to the server's untracked types", () => {
    const types = JSON.parse(withStatusUntracked(server));
    expect(types.slice(0, 2)).toEqual([
      'comm_info_request',
      'kernel_info_request'
    ]);
    for (const type of [
      CONTROL_REQUEST,
      'create_subshell_request',
      'comm_open'
    ]) {
      expect(types).toContain(type);
    }
    expect(types).not.toContain('comm_msg'); // a widget callback's busy
    expect(new Set(types).size).toBe(types.length);
  });

  it('changes nothing twice, and leaves a list it cannot read alone', () => {
    const once = withStatusUntracked(server);
    expect(withStatusUntracked(once)).toBe(once);
    expect(JSON.parse(withStatusUntracked(''))).toEqual([
      ...STATUS_UNTRACKED_TYPES
    ]);
    expect(withStatusUntracked('not json')).toBe('not json');
    expect(withStatusUntracked('{"a": 1}')).toBe('{"a": 1}');
  });
});

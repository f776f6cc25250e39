import { describe, expect, it } from 'vitest';

import {
  COMM_TARGET,
  CONTROL_REPLY,
  CONTROL_REQUEST,
  PROTOCOL_VERSION,
  addRequest,
  cancelRequest,
  parseCommMessage
} from '../src/messages';
import schema from '../../jupyter_spark_sessions/protocol.schema.json';
import { board } from './fixtures';

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

/**
 * The protocol at run time, beside the types generated into protocol.ts: its
 * constants, the requests the sidebar sends and checks of what the kernel
 * sends. The one definition is jupyter_spark_sessions/protocol.schema.json
 * (explained in docs/protocol.md); a test checks these constants against it.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */
import type {
  AddKind,
  AddRequest,
  Board,
  BoardPatchMessage,
  CancelAllRequest,
  CancelGroupsRequest,
  CancelRequest,
  CancelSessionRequest,
  CancelSource,
  CommMessage,
  GroupState,
  Reply,
  Request,
  StopQueryRequest,
  Version
} from './protocol';

/** The protocol version this frontend speaks. */
export const PROTOCOL_VERSION: Version = 1;
/** Kernel message type of a request on the control channel. */
export const CONTROL_REQUEST = 'spark_sessions_request';
/** Kernel message type of the kernel's answer on the control channel. */
export const CONTROL_REPLY = 'spark_sessions_reply';
/** The comm target a frontend opens to receive board pushes. */
export const COMM_TARGET = 'jupyter_spark_sessions';

/**
 * The requests the sidebar makes (or makes JupyterLab make) while a cell may
 * be running. ipykernel 7 answers each with a busy then an idle status on
 * IOPub, whose parent is the request: on the control channel (the probe, `list`,
 * cancel; JupyterLab's `create_subshell_request` for the comm's subshell) and
 * on a subshell (the comm's `comm_open`). JupyterLab took that idle for the
 * kernel's and read "Idle" while the cell ran (issue 39, 8). It skips the
 * statuses of the parent types listed in the page option
 * `untracked_message_types` (the Jupyter server's list: `kernel_info_request`
 * and others already): these are added to it. Not `comm_msg`, whose status
 * is a widget callback's busy.
 */
export const STATUS_UNTRACKED_TYPES: ReadonlyArray<string> = [
  CONTROL_REQUEST,
  'kernel_info_request',
  'create_subshell_request',
  'delete_subshell_request',
  'list_subshell_request',
  'comm_open'
];

/**
 * The page option `untracked_message_types` (a JSON list, or '' when the
 * server gives none) with STATUS_UNTRACKED_TYPES added; unchanged when it
 * holds them all already, or when it is not a list (it is not ours to fix).
 */
export function withStatusUntracked(option: string): string {
  let types: unknown = [];
  if (option.trim() !== '') {
    try {
      types = JSON.parse(option);
    } catch {
      return option;
    }
  }
  if (!Array.isArray(types)) {
    return option;
  }
  const missing = STATUS_UNTRACKED_TYPES.filter(t => !types.includes(t));
  return missing.length ? JSON.stringify([...types, ...missing]) : option;
}

/** The final states: the kernel reports them once Spark says the jobs ended. */
export const FINAL_STATES: ReadonlyArray<GroupState> = [
  'succeeded',
  'failed',
  'cancelled',
  'lost'
];

/** Whether a state is final (the kernel observed the jobs end). */
export function isFinalState(state: string): boolean {
  return (FINAL_STATES as ReadonlyArray<string>).includes(state);
}

/** What a cancel request aims at: exactly one of these. */
export type CancelTarget =
  | Pick<CancelGroupsRequest, 'groups'>
  | Pick<CancelSessionRequest, 'session'>
  | Pick<CancelAllRequest, 'all'>;

/** The request of an action. */
export type RequestOf<A extends Request['action']> = Extract<
  Request,
  { action: A }
>;

/** The fields a request of an action takes besides its version and action. */
export type RequestFields<A extends Request['action']> =
  RequestOf<A> extends infer R
    ? R extends unknown
      ? Omit<R, 'version' | 'action'>
      : never
    : never;

/** Builds a request of this protocol version. */
export function makeRequest<A extends Request['action']>(
  action: A,
  fields: RequestFields<A>
): RequestOf<A> {
  // TypeScript cannot match a generic spread to its member of the union.
  return {
    version: PROTOCOL_VERSION,
    action,
    ...fields
  } as unknown as RequestOf<A>;
}

let requestCounter = 0;

/** A request id unique in this page: the reply that names it is its answer. */
export function nextRequestId(): string {
  requestCounter += 1;
  return `jss-${Date.now().toString(36)}-${requestCounter}`;
}

/** A cancel request for `target`, sent from `source` (named in the cell's error). */
export function cancelRequest(
  target: CancelTarget,
  requestId?: string,
  source: CancelSource = 'sidebar'
): CancelRequest {
  const request = makeRequest('cancel', { ...target, source });
  if (requestId !== undefined) {
    request.request_id = requestId;
  }
  return request;
}

/**
 * A stop_query request for the streaming query `query` (its run id, id or
 * name), sent from `source`: the kernel answers at once, Spark stops it after.
 */
export function stopQueryRequest(
  query: string,
  requestId?: string,
  source: CancelSource = 'sidebar'
): StopQueryRequest {
  const request = makeRequest('stop_query', { query, source });
  if (requestId !== undefined) {
    request.request_id = requestId;
  }
  return request;
}

/** An `add` request (sent on the comm only: it copies files). */
export function addRequest(
  session: string,
  kind: AddKind,
  path: string,
  requestId: string,
  alias?: string
): AddRequest {
  const request = makeRequest('add', {
    request_id: requestId,
    session,
    kind,
    path
  });
  if (alias) {
    request.alias = alias;
  }
  return request;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` looks like a board (the fields the sidebar relies on). */
export function isBoard(value: unknown): value is Board {
  return (
    isObject(value) &&
    typeof value.seq === 'number' &&
    Array.isArray(value.sessions) &&
    Array.isArray(value.groups)
  );
}

/** Whether `value` looks like a board patch (the fields applyBoardPatch uses). */
export function isBoardPatch(value: unknown): value is BoardPatchMessage {
  return (
    isObject(value) &&
    value.type === 'board_patch' &&
    typeof value.seq === 'number' &&
    typeof value.base_seq === 'number' &&
    Array.isArray(value.groups) &&
    Array.isArray(value.removed_groups)
  );
}

/**
 * The board `patch` makes of `board`, or null when `board` is not the one the
 * patch applies to (a message was missed: ask for the whole board again). The
 * kernel's protocol.apply_board_patch does the same.
 */
export function applyBoardPatch(
  board: Board,
  patch: BoardPatchMessage
): Board | null {
  if (board.seq !== patch.base_seq) {
    return null;
  }
  const groups = new Map(board.groups.map(g => [g.id, g]));
  const removed = new Set(patch.removed_groups);
  let order = board.groups.map(g => g.id).filter(id => !removed.has(id));
  for (const group of patch.groups) {
    if (!groups.has(group.id)) {
      order.push(group.id);
    }
    groups.set(group.id, group);
  }
  if (patch.order) {
    order = patch.order;
  }
  return {
    seq: patch.seq,
    updated_at: patch.updated_at,
    sessions: patch.sessions ?? board.sessions,
    groups: order.flatMap(id => {
      const group = groups.get(id);
      return group ? [group] : [];
    }),
    other_running_jobs: patch.other_running_jobs,
    error: patch.error,
    // Sent whole, and only when a query changed.
    queries: patch.queries ?? board.queries
  };
}

/** Whether `value` is a reply of the protocol (ok or error). */
export function isReply(value: unknown): value is Reply {
  if (!isObject(value)) {
    return false;
  }
  if (value.status === 'ok') {
    return true;
  }
  return (
    value.status === 'error' &&
    isObject(value.error) &&
    typeof value.error.message === 'string'
  );
}

/** The comm message in a comm's data, or null if it is not one of ours. */
export function parseCommMessage(data: unknown): CommMessage | null {
  if (!isObject(data)) {
    return null;
  }
  if (data.type === 'board' && isBoard(data.board)) {
    return data as unknown as CommMessage;
  }
  if (isBoardPatch(data)) {
    return data;
  }
  if (data.type === 'reply' && isReply(data)) {
    return data as unknown as CommMessage;
  }
  return null;
}

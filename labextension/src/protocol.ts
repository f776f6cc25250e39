/**
 * GENERATED from jupyter_spark_sessions/protocol.schema.json (the protocol's
 * one definition) by json-schema-to-typescript: do not edit. After changing
 * the schema, run `jlpm generate:protocol`; labextension/test/protocol.test.ts
 * fails while this file is out of date. The protocol's constants and helpers
 * are in messages.ts.
 */

/**
 * The request protocol of jupyter_spark_sessions, version 1: every message on every channel (control channel, comm, REST relay). The one definition of the protocol: protocol.py enforces it, tests/test_protocol_schema.py checks the kernel's replies and board against it, and labextension/src/protocol.ts is generated from it. docs/protocol.md explains it.
 */
export type ProtocolMessage =
  Request | Reply | CommMessage | CellProgress | CellQuery;
/**
 * A request, whatever the channel. Unknown fields are errors.
 */
export type Request =
  | ListRequest
  | CancelRequest
  | SubscribeRequest
  | UnsubscribeRequest
  | AddRequest
  | StopQueryRequest;
/**
 * The protocol version (a kernel refuses others with unsupported_version).
 */
export type Version = 1;
/**
 * Any id the client chooses; the reply echoes it.
 */
export type RequestId = string | null;
/**
 * Cancels job groups: exactly one of groups, session, all.
 */
export type CancelRequest =
  CancelGroupsRequest | CancelSessionRequest | CancelAllRequest;
/**
 * Where the user asked for the cancel, named in the cancelled cell's one-line error. The REST relay always sends relay.
 */
export type CancelSource = 'sidebar' | 'panel' | 'cell' | 'relay' | 'magic';
/**
 * A session name, group id, comm id or alias.
 */
export type Name = string;
/**
 * The comm to (un)subscribe: required on the control channel; on a comm, defaults to that comm.
 */
export type CommId = string | null;
/**
 * How a file is shipped to a session (Spark's addFile, archive, pyFile).
 */
export type AddKind = 'file' | 'archive' | 'pyfile';
/**
 * The kernel's answer to one request (on the comm, as a CommReply).
 */
export type Reply = OkReply | ErrorReply;
/**
 * A success reply; its fields depend on the action.
 */
export type OkReply =
  | ListReply
  | CancelReply
  | SubscribeReply
  | UnsubscribeReply
  | AddReply
  | StopQueryReply;
/**
 * Marks a reply sent on the comm (absent on the control channel and REST).
 */
export type ReplyType = 'reply';
/**
 * A group's state as Spark reported it (cancelling: asked, jobs not ended yet; lost: its driver or Connect server went away before its jobs ended).
 */
export type GroupState =
  'running' | 'cancelling' | 'succeeded' | 'failed' | 'cancelled' | 'lost';
/**
 * Epoch seconds, or null when unknown or not yet.
 */
export type Timestamp = number | null;
/**
 * active; stopping (a stop was asked, Spark has not reported its end); stopped; failed (error says why).
 */
export type QueryState = 'active' | 'stopping' | 'stopped' | 'failed';
/**
 * bad_request: not an object, wrong or missing fields; unsupported_version; unknown_action; unknown_group; unknown_session; unknown_query (no such streaming query, or it already ended); unknown_comm; failed: valid but could not be carried out; internal_error: a bug. The REST relay adds unknown_kernel (no such kernel) and no_reply (the kernel did not answer).
 */
export type ErrorCode =
  | 'bad_request'
  | 'unsupported_version'
  | 'unknown_action'
  | 'unknown_group'
  | 'unknown_session'
  | 'unknown_query'
  | 'unknown_comm'
  | 'failed'
  | 'internal_error'
  | 'unknown_kernel'
  | 'no_reply';
/**
 * A message the kernel sends on the comm.
 */
export type CommMessage = BoardMessage | BoardPatchMessage | CommReply;
/**
 * A reply on the comm: the reply with "type": "reply".
 */
export type CommReply = Reply & {
  type: 'reply';
};

/**
 * Asks for the board.
 */
export interface ListRequest {
  version: Version;
  action: 'list';
  request_id?: RequestId;
}
/**
 * Cancels the running jobs of these groups.
 */
export interface CancelGroupsRequest {
  version: Version;
  action: 'cancel';
  request_id?: RequestId;
  source?: CancelSource;
  /**
   * 1 to 1000 group ids.
   *
   * @minItems 1
   * @maxItems 1000
   */
  groups: Name[];
}
/**
 * Cancels every running job group of a session, and its jobs outside any group.
 */
export interface CancelSessionRequest {
  version: Version;
  action: 'cancel';
  request_id?: RequestId;
  source?: CancelSource;
  session: Name;
}
/**
 * Cancels the running jobs of every managed session.
 */
export interface CancelAllRequest {
  version: Version;
  action: 'cancel';
  request_id?: RequestId;
  source?: CancelSource;
  all: true;
}
/**
 * Pushes every board change to a comm.
 */
export interface SubscribeRequest {
  version: Version;
  action: 'subscribe';
  request_id?: RequestId;
  comm_id?: CommId;
}
/**
 * Stops the pushes to a comm.
 */
export interface UnsubscribeRequest {
  version: Version;
  action: 'unsubscribe';
  request_id?: RequestId;
  comm_id?: CommId;
}
/**
 * Adds a file to a session (comm only: it copies files, the control channel must stay free).
 */
export interface AddRequest {
  version: Version;
  action: 'add';
  request_id?: RequestId;
  session: Name;
  kind: AddKind;
  /**
   * Relative to the kernel's working directory, or absolute.
   */
  path: string;
  /**
   * The name in the session, when not the default (the kernel refuses one for a pyfile).
   */
  alias?: string | null;
}
/**
 * Asks Spark to stop a streaming query and returns at once: the query shows stopping until Spark reports it ended (then stopped, or failed).
 */
export interface StopQueryRequest {
  version: Version;
  action: 'stop_query';
  request_id?: RequestId;
  /**
   * A session name, group id, comm id or alias.
   */
  query: string;
  source?: CancelSource;
}
/**
 * The answer to list: the board.
 */
export interface ListReply {
  type?: ReplyType;
  version: Version;
  request_id: RequestId;
  action: 'list';
  status: 'ok';
  board: Board;
}
/**
 * Everything the kernel reports, at one moment (BoardSnapshot.to_dict()). Times are epoch seconds.
 */
export interface Board {
  /**
   * Increases with every change.
   */
  seq: number;
  /**
   * The last read from Spark.
   */
  updated_at: number;
  sessions: Session[];
  groups: Group[];
  /**
   * Running jobs outside managed groups (the user's own).
   */
  other_running_jobs: number;
  /**
   * Why Spark's status could not be read ("" when it could).
   */
  error: string;
  /**
   * The sessions' streaming queries: every active one, and the last ended ones.
   */
  queries: Query[];
}
/**
 * A registered Spark session.
 */
export interface Session {
  name: string;
  origin: 'created' | 'adopted';
  backend: 'classic' | 'connect';
  /**
   * Spark's master, or a Connect server's sc://host:port (never its token).
   */
  master: string;
  session_id: string;
  isolated: boolean;
  /**
   * The session's folder on the driver.
   */
  directory: string;
  /**
   * What keeps the session from working now ("" when nothing does): a stopped context, an unreachable Spark Connect server.
   */
  disconnected: string;
  /**
   * Files, archives and Python files added to the session, oldest first.
   */
  files: SessionFile[];
  /**
   * Its jobs (Connect: operations) that have not ended, in any group or none.
   */
  running_jobs: number;
  /**
   * The driver's Spark UI ("" when it is off, or the server's own: Connect).
   */
  ui_url: string;
  /**
   * Why the session has no Spark UI link ("" when it has one): the UI is off, or a remote Spark Connect server's UI, which the protocol does not locate.
   */
  ui_note: string;
  /**
   * That UI answers only this kernel's Jupyter server (it wants a secret the server adds: a context or a local Spark Connect server this project started on a local master); false when anyone who reaches its port can read it (a context the user started, a cluster master's) or there is no UI.
   */
  ui_protected: boolean;
  /**
   * The page of that UI (a path under it) listing the session's operations with their Spark jobs: a local Spark Connect server's Connect tab ("" for classic sessions, whose jobs have pages of their own, and without a UI).
   */
  operations_page: string;
  /**
   * Its share of the task slots against other sessions' ("weight 3, min share 1"; "pool 'x'" in a pool of the user's; "" when every session's jobs share one queue: FIFO).
   */
  share: string;
  /**
   * The task slots of the context it runs on (0: unknown, as on Spark Connect). Its running tasks are its groups' active tasks.
   */
  slots: number;
  /**
   * Its Python packages of its own, in one line ("jsspkg==1.0, x-1.0-py3-none-any.whl, -r req.txt": create --pip, pip); "" when its UDFs use the kernel's.
   */
  packages: string;
  /**
   * Its streaming queries that have not ended.
   */
  active_queries: number;
}
/**
 * One file added to a session.
 */
export interface SessionFile {
  name: string;
  kind: AddKind;
  /**
   * Bytes.
   */
  size: number;
}
/**
 * The jobs of one cell execution in one session.
 */
export interface Group {
  /**
   * "session:execution_count".
   */
  id: string;
  session: string;
  execution_count: number;
  /**
   * The cell's first line.
   */
  description: string;
  state: GroupState;
  /**
   * The cell that owns the group has not ended.
   */
  cell_running: boolean;
  submitted_at: Timestamp;
  completed_at: Timestamp;
  cancel_requested_at: Timestamp;
  tasks: TaskCounts;
  /**
   * Tasks of ENDED jobs still stopping on executors.
   */
  tasks_still_running: number;
  jobs: Job[];
  /**
   * Its stages, slot chart and findings (null: nothing known inside it, as for Spark Connect operations).
   */
  inside: GroupInside | null;
}
/**
 * Task counts of a group, job or stage, as Spark's status store reports them.
 */
export interface TaskCounts {
  total: number;
  active: number;
  completed: number;
  failed: number;
  killed: number;
  skipped: number;
}
/**
 * One Spark job of a group (for Spark Connect: one operation a cell submitted).
 */
export interface Job {
  id: number;
  name: string;
  /**
   * Spark's: RUNNING, SUCCEEDED, FAILED, UNKNOWN.
   */
  status: string;
  submitted_at: Timestamp;
  completed_at: Timestamp;
  tasks: TaskCounts;
  stage_ids: number[];
  /**
   * Why its tasks were killed (a Connect operation interrupted on the server: its OPERATION_CANCELED message).
   */
  kill_reasons: string[];
  /**
   * Its running stages (running jobs only).
   */
  stages: Stage[];
  /**
   * Spark Connect: the operation this job stands for ("" for classic jobs).
   */
  operation_id: string;
  /**
   * Its state in the views' words: Spark's status, except that a job a cancel ended (which Spark reports FAILED) is cancelled.
   */
  state: 'running' | 'succeeded' | 'failed' | 'cancelled' | 'lost';
  /**
   * It ran on a driver that was since replaced (restart): the live driver's Spark UI has another job under its id, so views do not link it.
   */
  previous_driver: boolean;
  /**
   * The first line of why it failed, as Spark says (the failed stage's reason, or the Connect operation's error): "" unless Spark reports it FAILED.
   */
  error: string;
  /**
   * Its stages Spark skipped (their output was there already).
   */
  skipped_stages: number;
}
/**
 * One running stage of a running job.
 */
export interface Stage {
  id: number;
  name: string;
  attempt: number;
  tasks: TaskCounts;
}
/**
 * What happened inside a group: its stages (at most 10 rows: the running and failed first, then the longest), its slot chart, and the diagnosis' one-line findings.
 */
export interface GroupInside {
  stages: StageRow[];
  /**
   * Stages not shown as rows.
   */
  more_stages: number;
  /**
   * Stages of its ended jobs Spark skipped (their output was there already).
   */
  skipped_stages: number;
  /**
   * Stages whose figures were gone before the board read them (Spark keeps a bounded number of ended stages).
   */
  unknown_stages: number;
  chart: SlotChart | null;
  /**
   * One line each: what was seen, in figures, and the usual remedy.
   */
  findings: string[];
}
/**
 * One stage of a group as the views show it (jss.StageFigures): its code (Spark's call site), tasks, time and figures.
 */
export interface StageRow {
  id: number;
  attempt: number;
  job: number;
  /**
   * Spark's call site: "count at In [4] line 2".
   */
  name: string;
  status: 'active' | 'complete' | 'failed' | 'cancelled';
  total: number;
  done: number;
  active: number;
  failed: number;
  killed: number;
  /**
   * Seconds from its start to its end (or now).
   */
  elapsed: number;
  input_bytes: number;
  shuffle_read_bytes: number;
  shuffle_write_bytes: number;
  memory_spilled_bytes: number;
  disk_spilled_bytes: number;
  /**
   * Of its ended tasks (null: none yet).
   */
  median_task_seconds: number | null;
  /**
   * Its slowest ended task (null: none yet).
   */
  max_task_seconds: number | null;
}
/**
 * The group's running tasks on each executor, sampled at each poll, against each executor's task slots; with the stages' starts. At most 120 samples (neighbours merged as the group runs on).
 */
export interface SlotChart {
  start: Timestamp;
  end: Timestamp;
  executors: string[];
  /**
   * Task slots per executor, in the order of executors.
   */
  slots: number[];
  /**
   * [epoch seconds, running tasks per executor].
   */
  samples: unknown[][];
  /**
   * [epoch seconds, stage id] of each stage's start (the first 40).
   */
  stage_marks: unknown[][];
}
/**
 * A streaming query of a managed session. Its micro-batch jobs are not groups: its figures stand for them.
 */
export interface Query {
  /**
   * The query's id (the same across restarts from a checkpoint).
   */
  id: string;
  /**
   * This run's id (the job group of its micro-batch jobs).
   */
  run_id: string;
  /**
   * Its queryName ("" when unnamed).
   */
  name: string;
  session: Name;
  state: QueryState;
  /**
   * Why it failed (its error's first line), or why a stop could not be sent; "" otherwise.
   */
  error: string;
  /**
   * The group id of the cell that started it ("a:5"); "" when a thread did.
   */
  started_by: string;
  started_at: Timestamp;
  ended_at: Timestamp | null;
  /**
   * Its last completed micro-batch (null before the first).
   */
  batch_id: number | null;
  /**
   * Rows in that batch.
   */
  input_rows: number;
  /**
   * Rows a second arriving, over its batches of the last 30 s (the board's own figure: Spark's inputRowsPerSecond of one batch after empty triggers reads far above the source's rate); null before two progress reports.
   */
  input_rate: number | null;
  /**
   * Rows a second processed, in that batch.
   */
  process_rate: number | null;
  /**
   * How long that batch took (its trigger's execution).
   */
  batch_duration_ms: number | null;
  /**
   * Spark's status message ("Waiting for data to arrive").
   */
  message: string;
  /**
   * Where a stop came from (sidebar, panel, cell, relay, magic, interrupt, cancel), or null.
   */
  stop_source: string | null;
  /**
   * (time, input rate, process rate) of its recent batches, oldest first (at most 120).
   *
   * @maxItems 120
   */
  history: unknown[][];
}
/**
 * The answer to cancel: the groups now cancelling, and why others were not.
 */
export interface CancelReply {
  type?: ReplyType;
  version: Version;
  request_id: RequestId;
  action: 'cancel';
  status: 'ok';
  /**
   * The group ids now cancelling.
   */
  cancelling: string[];
  /**
   * Why the other groups were not cancelled (no running job), one line each.
   */
  messages: string[];
}
/**
 * The answer to subscribe: the comm subscribed, and the board as it is now.
 */
export interface SubscribeReply {
  type?: ReplyType;
  version: Version;
  request_id: RequestId;
  action: 'subscribe';
  status: 'ok';
  /**
   * The comm now subscribed.
   */
  comm_id: string;
  board: Board;
}
/**
 * The answer to unsubscribe.
 */
export interface UnsubscribeReply {
  type?: ReplyType;
  version: Version;
  request_id: RequestId;
  action: 'unsubscribe';
  status: 'ok';
  /**
   * The comm no longer subscribed.
   */
  comm_id: string;
}
/**
 * The answer to add: what the session now holds.
 */
export interface AddReply {
  type?: ReplyType;
  version: Version;
  request_id: RequestId;
  action: 'add';
  status: 'ok';
  /**
   * False when the same content was already in the session.
   */
  added: boolean;
  artifact: Artifact;
}
/**
 * A file added to a session, as an add reply reports it.
 */
export interface Artifact {
  /**
   * Its name in the session.
   */
  name: string;
  kind: AddKind;
  /**
   * Bytes of the file added.
   */
  size: number;
  /**
   * Where the driver keeps it.
   */
  path: string;
}
/**
 * The answer to stop_query: the query as the board now shows it (stopping, or already stopping).
 */
export interface StopQueryReply {
  type?: ReplyType;
  version: Version;
  request_id: RequestId;
  action: 'stop_query';
  status: 'ok';
  query: Query;
}
/**
 * A request that was refused or failed: nothing happened.
 */
export interface ErrorReply {
  type?: ReplyType;
  version: Version;
  /**
   * The request's request_id when it was a string, else null.
   */
  request_id: string | null;
  status: 'error';
  error: ReplyError;
}
/**
 * What went wrong; message is one line, meant for users.
 */
export interface ReplyError {
  code: ErrorCode;
  message: string;
}
/**
 * The whole board, pushed on a subscribed comm at the first change after it subscribed.
 */
export interface BoardMessage {
  version: Version;
  type: 'board';
  board: Board;
}
/**
 * Pushed on a subscribed comm after every later change: what changed since the board at base_seq (the last one pushed). A frontend whose board is not at base_seq asks for the whole board again (a list request).
 */
export interface BoardPatchMessage {
  version: Version;
  type: 'board_patch';
  /**
   * The board's seq after the patch.
   */
  seq: number;
  /**
   * The seq of the board it applies to.
   */
  base_seq: number;
  /**
   * The last read from Spark.
   */
  updated_at: number;
  /**
   * Every session, present only when one changed.
   */
  sessions?: Session[];
  /**
   * The groups new or changed since base_seq, whole; the new ones go after the others unless order says otherwise.
   */
  groups: Group[];
  /**
   * Ids of the groups no longer on the board.
   */
  removed_groups: string[];
  /**
   * Every group id in the board's order, present only when it is not the board's order with the removed groups left out and the new ones after.
   */
  order?: string[];
  other_running_jobs: number;
  error: string;
  /**
   * Every query, present only when one changed.
   */
  queries?: Query[];
}
/**
 * The in-cell progress view: the data of the `application/vnd.jupyter-spark-sessions.cell+json` output the kernel shows under a cell running Spark jobs, replaced by update_display_data as the board changes (not a message on a channel). `final`: the cell ended and this is its summary.
 */
export interface CellProgress {
  version: Version;
  /**
   * The cell's execution count (In [N]).
   */
  cell: number;
  final: boolean;
  groups: CellProgressGroup[];
}
/**
 * One job group of the cell (one per session it ran jobs in), as the view shows it. `tasks`: the tasks of all its jobs, `active` counting only those of its running jobs (an ended job's tasks still winding down are not running work).
 */
export interface CellProgressGroup {
  id: Name;
  session: Name;
  /**
   * A group's state as Spark reported it (cancelling: asked, jobs not ended yet; lost: its driver or Connect server went away before its jobs ended).
   */
  state:
    'running' | 'cancelling' | 'succeeded' | 'failed' | 'cancelled' | 'lost';
  description: string;
  jobs: number;
  jobs_running: number;
  /**
   * Its jobs that succeeded.
   */
  jobs_done: number;
  tasks: CellTasks;
  /**
   * The latest running job with its own tasks (what the running view's bar shows: a cell's later jobs are not known yet), or null.
   */
  job: {
    id: number;
    name: string;
    tasks: CellTasks;
  } | null;
  /**
   * That job's latest running stage, or null.
   */
  stage: {
    id: number;
    name: string;
    total: number;
    done: number;
    active: number;
  } | null;
  submitted_at: Timestamp | null;
  /**
   * Seconds from the first job's submission to the last one's end (or now).
   */
  elapsed: number;
  /**
   * The session's Spark UI address ("" when it has none).
   */
  ui_url: string;
  /**
   * The page of that UI listing the session's operations (Spark Connect; "" otherwise): where its job links go.
   */
  operations_page: string;
  /**
   * A Cancel can still stop something: the group runs jobs, or its cell still runs.
   */
  cancellable: boolean;
  /**
   * A failed group: the first line of why its first failed job failed ("" otherwise).
   */
  error: string;
  /**
   * Its stages, slot chart and findings (null: nothing known inside it, as for Spark Connect operations).
   */
  inside: GroupInside | null;
}
/**
 * Task counts as the in-cell view shows them (`done`: completed or skipped).
 */
export interface CellTasks {
  total: number;
  done: number;
  active: number;
  failed: number;
}
/**
 * The in-cell view of a streaming query: the data of the `application/vnd.jupyter-spark-sessions.query+json` output the kernel shows under the cell that started the query, replaced by update_display_data as its figures change, after the cell returned too (not a message on a channel). `final`: the query ended and `summary` is its last line.
 */
export interface CellQuery {
  version: Version;
  final: boolean;
  /**
   * The view in one line (its text/plain rendering).
   */
  summary: string;
  query: Query;
}

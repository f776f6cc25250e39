/**
 * The sidebar's state, and the protocol types it is built from.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 * The protocol is documented in docs/protocol.md (version 1); the board object
 * mirrors `BoardSnapshot.to_dict()` in jupyter_spark_sessions/jobs.py.
 */

/** The protocol version this frontend speaks. */
export const PROTOCOL_VERSION = 1;
/** Kernel message type of a request on the control channel. */
export const CONTROL_REQUEST = 'spark_sessions_request';
/** Kernel message type of the kernel's answer on the control channel. */
export const CONTROL_REPLY = 'spark_sessions_reply';
/** The comm target a frontend opens to receive board pushes. */
export const COMM_TARGET = 'jupyter_spark_sessions';

// -- protocol types --------------------------------------------------------------

/** Task counts of a group, job or stage, as Spark's status store reports them. */
export interface TaskCounts {
  total: number;
  active: number;
  completed: number;
  failed: number;
  killed: number;
  skipped: number;
}

/** One running stage of a running job. */
export interface Stage {
  id: number;
  name: string;
  attempt: number;
  tasks: TaskCounts;
}

/** One Spark job of a group. `status` is Spark's: RUNNING, SUCCEEDED, FAILED, UNKNOWN. */
export interface Job {
  id: number;
  name: string;
  status: string;
  submitted_at: number | null;
  completed_at: number | null;
  tasks: TaskCounts;
  stage_ids: number[];
  kill_reasons: string[];
  stages: Stage[];
}

/** A group's state as the kernel reports it. */
export type GroupState =
  'running' | 'cancelling' | 'succeeded' | 'failed' | 'cancelled';

/** The final states: the kernel reports them once Spark says the jobs ended. */
export const FINAL_STATES: ReadonlyArray<GroupState> = [
  'succeeded',
  'failed',
  'cancelled'
];

/** The jobs of one cell execution in one session. */
export interface Group {
  id: string;
  session: string;
  execution_count: number;
  description: string;
  state: GroupState;
  cell_running: boolean;
  submitted_at: number | null;
  completed_at: number | null;
  cancel_requested_at: number | null;
  tasks: TaskCounts;
  tasks_still_running: number;
  jobs: Job[];
}

/** A registered Spark session. */
export interface Session {
  name: string;
  origin: string; // "created" | "adopted"
  backend: string;
  master: string;
  session_id: string;
  isolated: boolean;
  directory: string;
  /** Why the session's Spark Connect server cannot be used now; "" when it can. */
  disconnected?: string;
  /** Files, archives and Python files added to the session, oldest first. */
  files?: SessionFile[];
}

/** One file added to a session. */
export interface SessionFile {
  name: string;
  kind: string; // "file" | "archive" | "pyfile"
  size: number; // bytes
}

/** Everything the kernel reports, at one moment. Times are epoch seconds. */
export interface Board {
  seq: number;
  updated_at: number;
  error: string;
  other_running_jobs: number;
  sessions: Session[];
  groups: Group[];
}

/** What a cancel request aims at: exactly one of these. */
export type CancelTarget =
  { groups: string[] } | { session: string } | { all: true };

export type Action = 'list' | 'cancel' | 'subscribe' | 'unsubscribe' | 'add';

/** How an `add` ships a file to a session (Spark's addFile / archive / pyFile). */
export type AddKind = 'file' | 'archive' | 'pyfile';

/** A file added to a session, as an `add` reply reports it. */
export type Artifact = {
  name: string;
  kind: AddKind;
  size: number;
  /** Where the driver keeps it. */
  path: string;
};

/** A request, whatever the channel. */
export type Request = {
  version: number;
  action: Action;
  request_id?: string;
  comm_id?: string;
  groups?: string[];
  session?: string;
  all?: true;
  /** `add` (comm only). */
  kind?: AddKind;
  path?: string;
  alias?: string;
};

/** The error of an error reply; `message` is one line meant for users. */
export interface ReplyError {
  code: string;
  message: string;
}

export interface ErrorReply {
  version: number;
  request_id: string | null;
  status: 'error';
  error: ReplyError;
}

export interface OkReply {
  version: number;
  request_id: string | null;
  action: Action;
  status: 'ok';
  /** `list` and `subscribe`. */
  board?: Board;
  /** `cancel`: the group ids now cancelling. */
  cancelling?: string[];
  /** `cancel`: why the other groups were not cancelled. */
  messages?: string[];
  /** `subscribe` and `unsubscribe`. */
  comm_id?: string;
  /** `add`: false when the same content was already in the session. */
  added?: boolean;
  /** `add`: what the session now holds. */
  artifact?: Artifact;
}

export type Reply = OkReply | ErrorReply;

/** A message the kernel sends on the comm. */
export type CommMessage =
  | { version: number; type: 'board'; board: Board }
  | ({ type: 'reply' } & Reply);

/** Builds a request of this protocol version. */
export function makeRequest(
  action: Action,
  fields: Partial<Omit<Request, 'version' | 'action'>> = {}
): Request {
  return { version: PROTOCOL_VERSION, action, ...fields };
}

/** A cancel request for `target`. */
export function cancelRequest(
  target: CancelTarget,
  requestId?: string
): Request {
  const request = makeRequest('cancel', { ...target });
  if (requestId !== undefined) {
    request.request_id = requestId;
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
  if (data.type === 'reply' && isReply(data)) {
    return data as unknown as CommMessage;
  }
  return null;
}

/** An `add` request (sent on the comm only: it copies files). */
export function addRequest(
  session: string,
  kind: AddKind,
  path: string,
  requestId: string,
  alias?: string
): Request {
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

/** The extensions shipped as archives (unpacked on the executors). */
const ARCHIVE_SUFFIXES = ['.zip', '.jar', '.tar', '.tar.gz', '.tgz'];
/** The extensions added to the Python path. */
const PYFILE_SUFFIXES = ['.py', '.egg'];

/**
 * The kind an `add` uses for a file name: archives (`.zip`, `.jar`, `.tar`,
 * `.tar.gz`, `.tgz`), Python files (`.py`, `.egg`), else a plain file.
 */
export function inferAddKind(fileName: string): AddKind {
  const name = fileName.toLowerCase();
  if (ARCHIVE_SUFFIXES.some(suffix => name.endsWith(suffix))) {
    return 'archive';
  }
  if (PYFILE_SUFFIXES.some(suffix => name.endsWith(suffix))) {
    return 'pyfile';
  }
  return 'file';
}

/**
 * The name a file gets in a session when no alias is given, as the kernel
 * chooses it: an archive's folder is its name without the archive suffix
 * (`lookup.tar.gz` -> `lookup`); anything else keeps its name.
 */
export function defaultNameInSession(fileName: string, kind: AddKind): string {
  if (kind !== 'archive') {
    return fileName;
  }
  const lower = fileName.toLowerCase();
  // Longest first: `.tar.gz` before a shorter suffix could match.
  const suffix = [...ARCHIVE_SUFFIXES]
    .sort((a, b) => b.length - a.length)
    .find(s => lower.endsWith(s));
  return suffix ? fileName.slice(0, -suffix.length) : fileName;
}

/**
 * The alias to send for what the user typed: none when the field is empty,
 * equals the default name, or the kind takes no alias (Python files).
 */
export function aliasToSend(
  typed: string,
  fileName: string,
  kind: AddKind
): string | undefined {
  const alias = typed.trim();
  if (kind === 'pyfile' || !alias) {
    return undefined;
  }
  return alias === defaultNameInSession(fileName, kind) ? undefined : alias;
}

/** What to tell the user about an `add` reply. */
export type AddOutcome = {
  level: 'success' | 'info' | 'error';
  message: string;
};

/**
 * The message of an `add` reply for `fileName` and `session`: success,
 * info when the same content was already there (`added: false`), or error.
 */
export function addOutcome(
  reply: Reply,
  fileName: string,
  session: string
): AddOutcome {
  if (reply.status === 'error') {
    return { level: 'error', message: replyErrorMessage(reply) };
  }
  const name = reply.artifact?.name || fileName;
  if (reply.added === false) {
    return {
      level: 'info',
      message: `'${name}' is already in session '${session}' with the same content.`
    };
  }
  const kind = reply.artifact?.kind ?? 'file';
  const renamed = name === fileName ? '' : ` as '${name}'`;
  return {
    level: 'success',
    message: `Added ${kind} '${fileName}' to session '${session}'${renamed}.`
  };
}

/** The one-line message of an error reply. */
export function replyErrorMessage(reply: ErrorReply): string {
  return oneLine(reply.error.message || reply.error.code || 'Request failed.');
}

/** Collapses a message to one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

// -- helpers ---------------------------------------------------------------------

/** Fraction (0 to 1) of the tasks done: (completed + skipped) / total. */
export function progress(item: { tasks: TaskCounts }): number {
  const { total, completed, skipped } = item.tasks;
  if (!total || total <= 0) {
    return 0;
  }
  return Math.min(1, Math.max(0, (completed + skipped) / total));
}

/** Tasks done (completed + skipped), for "done/total tasks" labels. */
export function tasksDone(tasks: TaskCounts): number {
  return tasks.completed + tasks.skipped;
}

/** Whether a state is final (the kernel observed the jobs end). */
export function isFinalState(state: string): boolean {
  return (FINAL_STATES as ReadonlyArray<string>).includes(state);
}

/**
 * Seconds from a group's submission to its completion, or to `now` (epoch
 * seconds) while it has not completed; null when it has no submission time.
 */
export function elapsedSeconds(group: Group, now: number): number | null {
  if (group.submitted_at === null || group.submitted_at === undefined) {
    return null;
  }
  let end: number | null = group.completed_at;
  if (end === null || end === undefined) {
    if (isFinalState(group.state)) {
      const ends = group.jobs
        .map(job => job.completed_at)
        .filter((t): t is number => typeof t === 'number');
      end = ends.length ? Math.max(...ends) : null;
      if (end === null) {
        return null;
      }
    } else {
      end = now;
    }
  }
  return Math.max(0, end - group.submitted_at);
}

/** "42s", "3m 05s", "2h 01m"; an en dash for an unknown duration. */
export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) {
    return '\u2013';
  }
  const total = Math.max(0, Math.floor(seconds));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = total % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (hours > 0) {
    return `${hours}h ${pad(minutes)}m`;
  }
  if (minutes > 0) {
    return `${minutes}m ${pad(secs)}s`;
  }
  return `${secs}s`;
}

/** Groups sorted newest first (by submission time, then execution count). */
export function newestFirst(groups: ReadonlyArray<Group>): Group[] {
  return [...groups].sort((a, b) => {
    const ta = a.submitted_at ?? -Infinity;
    const tb = b.submitted_at ?? -Infinity;
    if (ta !== tb) {
      return tb > ta ? 1 : -1;
    }
    return b.execution_count - a.execution_count;
  });
}

// -- the sidebar model -----------------------------------------------------------

/** Where the sidebar stands with the current notebook's kernel. */
export type SidebarStatus =
  'no-kernel' | 'connecting' | 'not-loaded' | 'ready' | 'error';

/** The state a group is displayed in: the kernel's, or the local overlay. */
export type DisplayState = GroupState;

export const MESSAGES = {
  noKernel: 'Open a notebook to see its Spark sessions.',
  connecting: 'Connecting to the kernel\u2026',
  notLoaded:
    'This kernel has not loaded jupyter_spark_sessions: run `%load_ext jupyter_spark_sessions`.',
  noSessions: 'No sessions yet: run `%spark_session create NAME`.',
  error: 'Could not read the Spark sessions of this kernel.'
} as const;

export type Listener = (model: SidebarModel) => void;

/**
 * The current kernel's status, latest board and local cancel overlays.
 *
 * A group whose cancel was clicked shows 'cancelling' until the board reports
 * it in a non-running state, then the reported state: the overlay never turns
 * into a final state by itself.
 */
export class SidebarModel {
  /** The kernel's display name, or null when no notebook is current. */
  get kernelName(): string | null {
    return this._kernelName;
  }

  get status(): SidebarStatus {
    return this._status;
  }

  /** The latest board, or null before the first one (and after a reset). */
  get board(): Board | null {
    return this._board;
  }

  /** A one-line error to show (a failed cancel, a lost connection), or ''. */
  get error(): string {
    return this._error;
  }

  /** Subscribes to changes; returns the function that unsubscribes. */
  connect(listener: Listener): () => void {
    this._listeners.push(listener);
    return () => {
      this._listeners = this._listeners.filter(l => l !== listener);
    };
  }

  /**
   * Starts over for a (new or restarted) kernel: no board, no overlays, no
   * error; 'connecting' with a kernel name, 'no-kernel' without.
   */
  reset(kernelName: string | null): void {
    this._kernelName = kernelName;
    this._status = kernelName === null ? 'no-kernel' : 'connecting';
    this._board = null;
    this._error = '';
    this._cancelling.clear();
    this._emit();
  }

  /** Sets the status; an 'error' status comes with its message. */
  setStatus(status: SidebarStatus, error = ''): void {
    if (status === this._status && error === this._error) {
      return;
    }
    this._status = status;
    this._error = oneLine(error);
    this._emit();
  }

  /** Shows (or with '' clears) a one-line error without changing the status. */
  setError(error: string): void {
    const line = oneLine(error);
    if (line === this._error) {
      return;
    }
    this._error = line;
    this._emit();
  }

  /**
   * Applies a board (from `list`, `subscribe` or a push). A board older than
   * the current one (lower seq) is ignored. Overlays of groups the board shows
   * in a non-running state (or no longer shows) are dropped.
   * Returns whether the board was applied.
   */
  applyBoard(board: Board): boolean {
    if (this._board !== null && board.seq < this._board.seq) {
      return false;
    }
    this._board = board;
    this._status = 'ready';
    const states = new Map(board.groups.map(g => [g.id, g.state]));
    for (const id of [...this._cancelling]) {
      if (states.get(id) !== 'running') {
        this._cancelling.delete(id);
      }
    }
    this._emit();
    return true;
  }

  /**
   * Records that a cancel was requested for these groups (the click): those
   * the board shows running display 'cancelling' from now on.
   */
  markCancelling(groupIds: ReadonlyArray<string>): void {
    const running = new Set(
      (this._board?.groups ?? [])
        .filter(g => g.state === 'running')
        .map(g => g.id)
    );
    let changed = false;
    for (const id of groupIds) {
      if (running.has(id) && !this._cancelling.has(id)) {
        this._cancelling.add(id);
        changed = true;
      }
    }
    if (this._error) {
      this._error = '';
      changed = true;
    }
    if (changed) {
      this._emit();
    }
  }

  /**
   * The kernel answered a cancel for `groupIds`: on success the overlay stays
   * on the groups it is cancelling and goes from the others (its messages say
   * why); on error it goes from all of them and the error is shown.
   */
  cancelAnswered(groupIds: ReadonlyArray<string>, reply: Reply): void {
    if (reply.status === 'ok') {
      const cancelling = new Set(reply.cancelling ?? []);
      for (const id of groupIds) {
        if (!cancelling.has(id)) {
          this._cancelling.delete(id);
        }
      }
      this._error = oneLine((reply.messages ?? []).join(' '));
    } else {
      for (const id of groupIds) {
        this._cancelling.delete(id);
      }
      this._error = replyErrorMessage(reply);
    }
    this._emit();
  }

  /** A cancel request could not be sent or got no answer. */
  cancelFailed(groupIds: ReadonlyArray<string>, error: string): void {
    for (const id of groupIds) {
      this._cancelling.delete(id);
    }
    this._error = oneLine(error) || 'Cancel failed.';
    this._emit();
  }

  /** Whether a cancel is pending (locally) for the group. */
  isCancelRequested(groupId: string): boolean {
    return this._cancelling.has(groupId);
  }

  /** The state to display: 'cancelling' while a local cancel is pending on a running group. */
  displayState(group: Group): DisplayState {
    if (group.state === 'running' && this._cancelling.has(group.id)) {
      return 'cancelling';
    }
    return group.state;
  }

  /** Whether the group can be cancelled from the sidebar (displayed 'running'). */
  canCancel(group: Group): boolean {
    return this.displayState(group) === 'running';
  }

  /** The sessions on the board. */
  sessions(): Session[] {
    return this._board ? [...this._board.sessions] : [];
  }

  /** The groups of a session, newest first. */
  groupsOf(session: string): Group[] {
    const groups = (this._board?.groups ?? []).filter(
      g => g.session === session
    );
    return newestFirst(groups);
  }

  /** The groups whose session is not (or no longer) on the board, newest first. */
  orphanGroups(): Group[] {
    const names = new Set((this._board?.sessions ?? []).map(s => s.name));
    return newestFirst(
      (this._board?.groups ?? []).filter(g => !names.has(g.session))
    );
  }

  /** The ids of a session's groups that can be cancelled now. */
  runningGroupIds(session?: string): string[] {
    return (this._board?.groups ?? [])
      .filter(g => session === undefined || g.session === session)
      .filter(g => this.canCancel(g))
      .map(g => g.id);
  }

  /** Whether some group is displayed running or cancelling (elapsed times tick). */
  hasActiveGroups(): boolean {
    return (this._board?.groups ?? []).some(g => !isFinalState(g.state));
  }

  /** The message shown instead of the sessions, or null when there are sessions. */
  emptyMessage(): string | null {
    switch (this._status) {
      case 'no-kernel':
        return MESSAGES.noKernel;
      case 'connecting':
        return MESSAGES.connecting;
      case 'not-loaded':
        return MESSAGES.notLoaded;
      case 'error':
      case 'ready':
        if (this._board === null) {
          return this._status === 'error'
            ? MESSAGES.error
            : MESSAGES.noSessions;
        }
        return this._board.sessions.length === 0 ? MESSAGES.noSessions : null;
    }
  }

  private _emit(): void {
    for (const listener of [...this._listeners]) {
      try {
        listener(this);
      } catch (error) {
        console.error('jupyter-spark-sessions: listener failed', error);
      }
    }
  }

  private _kernelName: string | null = null;
  private _status: SidebarStatus = 'no-kernel';
  private _board: Board | null = null;
  private _error = '';
  private _cancelling = new Set<string>();
  private _listeners: Listener[] = [];
}

/** "512 B", "3.4 KB", "200.0 MB": sizes of session files. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

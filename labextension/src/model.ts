/**
 * The sidebar's state: the current kernel's status, its latest board and the
 * local cancel and stop overlays.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */
import { oneLine, replyErrorMessage } from './format';
import { applyBoardPatch, isFinalState } from './messages';
import type {
  Board,
  BoardPatchMessage,
  CancelReply,
  Group,
  GroupState,
  Query,
  QueryState,
  Reply,
  Session,
  StopQueryReply
} from './protocol';
import { IListedQueries, listedQueries } from './queries';
import { MESSAGES, type SidebarStatus } from './status';

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

/** The state a group is displayed in: the kernel's, or the local overlay. */
export type DisplayState = GroupState;

/** Called with the model after each change. */
export type Listener = (model: SidebarModel) => void;

/**
 * The current kernel's status, latest board and local cancel overlays.
 *
 * A group whose cancel was clicked shows 'cancelling' until the board reports
 * it in a non-running state, then the reported state: the overlay never turns
 * into a final state by itself. A streaming query whose Stop was clicked
 * shows 'stopping' the same way, until the board reports it not active.
 */
export class SidebarModel {
  /** The kernel's display name, or null when no notebook is current. */
  get kernelName(): string | null {
    return this._kernelName;
  }

  /** The followed notebook's file name ('' when none). */
  get notebookName(): string {
    return this._notebookName;
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
  reset(kernelName: string | null, notebookName = ''): void {
    this._kernelName = kernelName;
    this._notebookName = notebookName;
    this._status = kernelName === null ? 'no-kernel' : 'connecting';
    this._board = null;
    this._error = '';
    this._cancelling.clear();
    this._stopping.clear();
    this._emit();
  }

  /** The followed notebook was renamed. */
  setNotebookName(name: string): void {
    if (name !== this._notebookName) {
      this._notebookName = name;
      this._emit();
    }
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
   * Applies a pushed patch; false when the board is not the one it applies to
   * (the caller then asks for the whole board).
   */
  applyPatch(patch: BoardPatchMessage): boolean {
    const board = this._board ? applyBoardPatch(this._board, patch) : null;
    return board !== null && this.applyBoard(board);
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
    const queryStates = new Map(
      (board.queries ?? []).map(q => [q.run_id, q.state])
    );
    for (const runId of [...this._stopping]) {
      if (queryStates.get(runId) !== 'active') {
        this._stopping.delete(runId);
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
      const answer = reply as Partial<CancelReply>; // the answer to a cancel
      const cancelling = new Set(answer.cancelling ?? []);
      for (const id of groupIds) {
        if (!cancelling.has(id)) {
          this._cancelling.delete(id);
        }
      }
      this._error = oneLine((answer.messages ?? []).join(' '));
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

  /**
   * Records that a stop was requested for the query of this run id (the
   * click): while the board shows it active, it displays 'stopping'.
   */
  markStopping(runId: string): void {
    const active = (this._board?.queries ?? []).some(
      q => q.run_id === runId && q.state === 'active'
    );
    let changed = false;
    if (active && !this._stopping.has(runId)) {
      this._stopping.add(runId);
      changed = true;
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
   * The kernel answered a stop: on success the overlay stays until the board
   * shows the query stopping (or gone from it when the kernel says it is
   * still active: the stop was not taken); on error it goes and the error is
   * shown.
   */
  stopAnswered(runId: string, reply: Reply): void {
    if (reply.status === 'ok') {
      const answer = reply as Partial<StopQueryReply>; // the answer to a stop
      if (answer.query?.state === 'active') {
        this._stopping.delete(runId);
        this._error = oneLine(answer.query.error);
      }
    } else {
      this._stopping.delete(runId);
      this._error = replyErrorMessage(reply);
    }
    this._emit();
  }

  /** A stop request could not be sent or got no answer. */
  stopFailed(runId: string, error: string): void {
    this._stopping.delete(runId);
    this._error = oneLine(error) || 'Stop failed.';
    this._emit();
  }

  /** The state to display: 'stopping' while a local stop is pending on an active query. */
  queryState(query: Query): QueryState {
    if (query.state === 'active' && this._stopping.has(query.run_id)) {
      return 'stopping';
    }
    return query.state;
  }

  /**
   * The streaming queries of a session the sidebar lists: those not ended,
   * newest first, then the newest ended ones (queries.ts).
   */
  queriesOf(session: string): IListedQueries {
    return listedQueries(this._board?.queries ?? [], session, q =>
      this.queryState(q)
    );
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
  private _notebookName = '';
  private _status: SidebarStatus = 'no-kernel';
  private _board: Board | null = null;
  private _error = '';
  private _cancelling = new Set<string>();
  /** Run ids of the queries whose Stop was clicked. */
  private _stopping = new Set<string>();
  private _listeners: Listener[] = [];
}

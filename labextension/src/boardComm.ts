/**
 * The kernel's Spark sessions comm, subscribed to the board: its pushes feed
 * the model, and its replies answer the `add` requests sent on it (the kernel
 * accepts `add` only there: it copies files).
 */
import { Kernel } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { RequestTimeout } from './controlChannel';
import { errorMessage, replyErrorMessage } from './format';
import {
  COMM_TARGET,
  addRequest,
  makeRequest,
  nextRequestId,
  parseCommMessage
} from './messages';
import { SidebarModel } from './model';
import type { AddKind, Reply } from './protocol';

/** How long an `add` waits for its answer (ms): it copies files. */
export const ADD_TIMEOUT_MS = 120000;
/** How long the comm waits for its kernel subshell before opening anyway (ms). */
export const SUBSHELL_WAIT_MS = 3000;

/** A comm request waiting for its reply. */
interface IPending {
  resolve: (reply: Reply) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** The board comm of one kernel, opened by `subscribe`, closed by `dispose`. */
export class BoardComm implements IDisposable {
  /**
   * `refreshBoard` asks for the whole board when a pushed patch does not
   * apply (a push was missed).
   */
  constructor(
    readonly kernel: Kernel.IKernelConnection,
    readonly model: SidebarModel,
    private readonly _refreshBoard: () => void,
    private readonly _addTimeoutMs = ADD_TIMEOUT_MS
  ) {}

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Whether the comm is open, so that comm requests (`add`) can be sent. */
  get isOpen(): boolean {
    return this._commOpen && this._comm !== null && !this._disposed;
  }

  /** Creates the comm and opens it with a `subscribe` (once: no-op when it exists). */
  subscribe(): void {
    if (this._comm || this._disposed) {
      return;
    }
    let comm: Kernel.IComm;
    try {
      comm = this.kernel.createComm(COMM_TARGET);
    } catch (error) {
      this.model.setStatus('error', errorMessage(error));
      return;
    }
    this._comm = comm;
    void this._openOnSubshell(comm);
  }

  /**
   * Sends an `add` request and resolves with the reply whose request_id
   * matches (ok or error). Rejects when the comm is not open, is closed before
   * the answer, or when no answer comes in time.
   */
  add(
    session: string,
    kind: AddKind,
    path: string,
    alias?: string
  ): Promise<Reply> {
    const comm = this._comm;
    if (this._disposed || comm === null || !this._commOpen || comm.isDisposed) {
      return Promise.reject(
        new Error(
          'Not connected to the Spark sessions of this kernel: try again in a moment.'
        )
      );
    }
    const requestId = nextRequestId();
    const request = addRequest(session, kind, path, requestId, alias);
    return new Promise<Reply>((resolve, reject) => {
      const timeoutMs = this._addTimeoutMs;
      const timer = setTimeout(() => {
        if (this._pending.delete(requestId)) {
          reject(new RequestTimeout(timeoutMs));
        }
      }, timeoutMs);
      this._pending.set(requestId, { resolve, reject, timer });
      try {
        const future = comm.send(request as any);
        // a comm_msg has no reply: only errors of the send matter
        future?.done?.catch?.(() => undefined);
      } catch (error) {
        this._settle(requestId, null, error);
      }
    });
  }

  /** Rejects the pending requests and closes the comm. */
  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._rejectPending('The connection to the kernel was closed.');
    const comm = this._comm;
    this._comm = null;
    if (comm && !comm.isDisposed) {
      comm.onClose = () => undefined;
      comm.onMsg = () => undefined;
      try {
        if (!this.kernel.isDisposed && this.kernel.status !== 'dead') {
          comm.close();
        } else {
          comm.dispose();
        }
      } catch {
        // the kernel went away: nothing left to close
      }
    }
  }

  /**
   * Opens the comm once its subshell (JupyterLab 4.4+, ipykernel 7) is up, so
   * that the kernel answers the subscribe while the notebook's cell is busy:
   * a `comm_open` on the main shell would wait for the running cell to end.
   */
  private async _openOnSubshell(comm: Kernel.IComm): Promise<void> {
    const started = (comm as { subshellStarted?: Promise<void> })
      .subshellStarted;
    const mode = (comm as { commsOverSubshells?: string }).commsOverSubshells;
    if (started && mode !== undefined && mode !== 'disabled') {
      try {
        await this.kernel.info;
        if (this.kernel.supportsSubshells) {
          // never resolves if the subshell cannot start: do not wait forever
          await Promise.race([started, delay(SUBSHELL_WAIT_MS)]);
        }
      } catch {
        // no kernel info or subshell: open on the main shell
      }
    }
    if (this._disposed || this._comm !== comm || comm.isDisposed) {
      return;
    }
    comm.onMsg = msg => {
      if (!this._disposed) {
        this._onData(msg.content.data);
      }
    };
    comm.onClose = () => {
      if (this._disposed || this._comm !== comm) {
        return;
      }
      this._comm = null;
      this._commOpen = false;
      this._rejectPending('The kernel closed the Spark sessions comm.');
      this.model.setError(
        'The kernel closed the Spark sessions comm: the sidebar no longer updates.'
      );
    };
    try {
      comm.open(
        makeRequest('subscribe', { request_id: nextRequestId() }) as any
      );
      this._commOpen = true;
    } catch (error) {
      this._comm = null;
      this.model.setStatus('error', errorMessage(error));
    }
  }

  private _onData(data: unknown): void {
    const message = parseCommMessage(data);
    if (message === null) {
      return;
    }
    if (message.type === 'board') {
      this.model.applyBoard(message.board);
      return;
    }
    if (message.type === 'board_patch') {
      if (!this.model.applyPatch(message)) {
        this._refreshBoard(); // a push was missed: the whole board again
      }
      return;
    }
    // The answer to a pending comm request (`add`) goes to its caller only.
    if (
      typeof message.request_id === 'string' &&
      this._pending.has(message.request_id)
    ) {
      this._settle(message.request_id, message, null);
      return;
    }
    if (message.status === 'error') {
      this.model.setError(replyErrorMessage(message));
      return;
    }
    if ('board' in message && message.board) {
      this.model.applyBoard(message.board);
    }
  }

  /** Settles a pending comm request with its reply, or an error. */
  private _settle(
    requestId: string,
    reply: Reply | null,
    error: unknown
  ): void {
    const pending = this._pending.get(requestId);
    if (!pending) {
      return;
    }
    this._pending.delete(requestId);
    clearTimeout(pending.timer);
    if (reply !== null) {
      pending.resolve(reply);
    } else {
      pending.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private _rejectPending(reason: string): void {
    for (const id of [...this._pending.keys()]) {
      this._settle(id, null, new Error(reason));
    }
  }

  private _disposed = false;
  private _comm: Kernel.IComm | null = null;
  private _commOpen = false;
  private _pending = new Map<string, IPending>();
}

function delay(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/**
 * The link between one kernel and the sidebar model: a probe on the control
 * channel (the standard `kernel_info_request`, then `list` when the kernel
 * lists the extension's marker), then the board comm (boardComm.ts) whose
 * pushes feed the model, and cancel and stop_query requests on the control
 * channel (answered while the notebook's cell is busy).
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { ADD_TIMEOUT_MS, BoardComm } from './boardComm';
import {
  RequestTimeout,
  requestKernelInfo,
  sendControlRequest
} from './controlChannel';
import { errorMessage, replyErrorMessage } from './format';
import { hasSparkSessionsMarker } from './kernelMarker';
import {
  cancelRequest,
  makeRequest,
  nextRequestId,
  stopQueryRequest
} from './messages';
import { SidebarModel } from './model';
import type { AddKind, Reply } from './protocol';

/**
 * How long the kernel_info probe waits (ms). ipykernel answers it on the
 * control channel within milliseconds, busy or not; a kernel that does not
 * (not ipykernel) cannot have loaded the extension.
 */
export const KERNEL_INFO_TIMEOUT_MS = 1000;
/** How long the `list` probe of a kernel with the marker waits (ms). */
export const PROBE_TIMEOUT_MS = 3000;
/** How long a cancel (or a query's stop) waits for its answer (ms). */
export const CANCEL_TIMEOUT_MS = 10000;

/** What the sidebar cancels: some groups, or a session's running groups. */
export type SidebarCancelTarget = { groups: string[] } | { session: string };

/** Options of a connection (the timeouts are for tests). */
export interface IConnectionOptions {
  kernelInfoTimeoutMs?: number;
  probeTimeoutMs?: number;
  cancelTimeoutMs?: number;
  addTimeoutMs?: number;
}

/**
 * The board of one kernel, fed into a model. Updates come from comm pushes:
 * there is no polling in the browser.
 */
export class KernelBoardConnection implements IDisposable {
  constructor(
    readonly kernel: Kernel.IKernelConnection,
    readonly model: SidebarModel,
    options: IConnectionOptions = {}
  ) {
    this._kernelInfoTimeoutMs =
      options.kernelInfoTimeoutMs ?? KERNEL_INFO_TIMEOUT_MS;
    this._probeTimeoutMs = options.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
    this._cancelTimeoutMs = options.cancelTimeoutMs ?? CANCEL_TIMEOUT_MS;
    this._comm = new BoardComm(
      kernel,
      model,
      () => void this._refreshBoard(),
      options.addTimeoutMs ?? ADD_TIMEOUT_MS
    );
    kernel.iopubMessage.connect(this._onIOPub, this);
    kernel.disposed.connect(this.dispose, this);
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Probes the kernel: its kernel_info (on the control channel) says whether
   * it has loaded the extension; if not, 'not-loaded' at once, else a control
   * `list`, then the comm subscription. While the extension is not loaded it
   * probes again after each cell execution (the user may run `%load_ext`).
   * A call while a probe runs makes that probe run once more if it finds the
   * extension not loaded (the cell that ended may have loaded it meanwhile).
   */
  start(): Promise<void> {
    if (this._disposed) {
      return Promise.resolve();
    }
    if (this._probing) {
      this._probeAgain = true;
      return this._probing;
    }
    this._probing = this._probeUntilSettled().finally(() => {
      this._probing = null;
    });
    return this._probing;
  }

  /**
   * Asks the kernel to cancel groups or a session's groups, showing them as
   * 'cancelling' at once; errors end up as the model's one-line error.
   * Resolves with the reply, or null when none came.
   */
  async cancel(target: SidebarCancelTarget): Promise<Reply | null> {
    const ids =
      'groups' in target
        ? target.groups
        : this.model.runningGroupIds(target.session);
    this.model.markCancelling(ids);
    let reply: Reply;
    try {
      reply = await sendControlRequest(
        this.kernel,
        cancelRequest(target, nextRequestId()),
        this._cancelTimeoutMs
      );
    } catch (error) {
      if (!this._disposed) {
        this.model.cancelFailed(ids, `Cancel failed: ${errorMessage(error)}`);
      }
      return null;
    }
    if (!this._disposed) {
      this.model.cancelAnswered(ids, reply);
    }
    return reply;
  }

  /**
   * Asks the kernel to stop the streaming query of this run id, showing it
   * 'stopping' at once; the kernel answers at once too, and the board says
   * when Spark reports it ended. Errors end up as the model's one-line error.
   * Resolves with the reply, or null when none came.
   */
  async stopQuery(runId: string): Promise<Reply | null> {
    this.model.markStopping(runId);
    let reply: Reply;
    try {
      reply = await sendControlRequest(
        this.kernel,
        stopQueryRequest(runId, nextRequestId()),
        this._cancelTimeoutMs
      );
    } catch (error) {
      if (!this._disposed) {
        this.model.stopFailed(runId, `Stop failed: ${errorMessage(error)}`);
      }
      return null;
    }
    if (!this._disposed) {
      this.model.stopAnswered(runId, reply);
    }
    return reply;
  }

  /** Whether the comm is open, so that comm requests (`add`) can be sent. */
  get isSubscribed(): boolean {
    return this._comm.isOpen;
  }

  /**
   * Adds a file to a session: sends an `add` request on the comm (the kernel
   * accepts it only there) and resolves with the reply whose request_id
   * matches (ok or error). Rejects when the comm is not open, is closed before
   * the answer, or when no answer comes in time.
   */
  addToSession(
    session: string,
    kind: AddKind,
    path: string,
    alias?: string
  ): Promise<Reply> {
    return this._comm.add(session, kind, path, alias);
  }

  /** Closes the comm and stops listening to the kernel. */
  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.kernel.iopubMessage.disconnect(this._onIOPub, this);
    this.kernel.disposed.disconnect(this.dispose, this);
    this._comm.dispose();
  }

  private async _probeUntilSettled(): Promise<void> {
    do {
      this._probeAgain = false;
      await this._probe();
    } while (
      this._probeAgain &&
      !this._disposed &&
      this.model.status === 'not-loaded'
    );
  }

  private async _probe(): Promise<void> {
    if (!(await this._kernelListsExtension())) {
      return;
    }
    let reply: Reply;
    try {
      reply = await sendControlRequest(
        this.kernel,
        makeRequest('list', { request_id: nextRequestId() }),
        this._probeTimeoutMs
      );
    } catch (error) {
      if (this._disposed) {
        return;
      }
      this.model.setStatus('error', errorMessage(error));
      return;
    }
    if (this._disposed) {
      return;
    }
    if (reply.status === 'error') {
      this.model.setStatus('error', replyErrorMessage(reply));
      return;
    }
    if ('board' in reply && reply.board) {
      this.model.applyBoard(reply.board);
    }
    this._comm.subscribe();
  }

  /**
   * Whether the kernel's kernel_info lists the extension's marker; sets
   * 'not-loaded' (or 'error') when it does not.
   */
  private async _kernelListsExtension(): Promise<boolean> {
    let info: unknown;
    try {
      info = await requestKernelInfo(this.kernel, this._kernelInfoTimeoutMs);
    } catch (error) {
      if (!this._disposed) {
        if (error instanceof RequestTimeout) {
          this.model.setStatus('not-loaded');
        } else {
          this.model.setStatus('error', errorMessage(error));
        }
      }
      return false;
    }
    if (this._disposed) {
      return false;
    }
    if (!hasSparkSessionsMarker(info)) {
      this.model.setStatus('not-loaded');
      return false;
    }
    return true;
  }

  /** The whole board, asked on the control channel (after a missed push). */
  private async _refreshBoard(): Promise<void> {
    if (this._refreshing || this._disposed) {
      return;
    }
    this._refreshing = true;
    try {
      const reply = await sendControlRequest(
        this.kernel,
        makeRequest('list', { request_id: nextRequestId() }),
        this._probeTimeoutMs
      );
      if (reply.status === 'ok' && 'board' in reply && reply.board) {
        this.model.applyBoard(reply.board);
      }
    } catch {
      // the next full board (a reconnect) will bring it
    } finally {
      this._refreshing = false;
    }
  }

  private _onIOPub(
    _kernel: Kernel.IKernelConnection,
    msg: KernelMessage.IIOPubMessage
  ): void {
    // Not loaded yet: probe again once a cell has run (it may have been %load_ext).
    if (
      isCellEnd(msg) &&
      (this.model.status === 'not-loaded' || this._probing !== null)
    ) {
      void this.start();
    }
  }

  private _disposed = false;
  private _probing: Promise<void> | null = null;
  private _probeAgain = false;
  private _refreshing = false;
  private readonly _comm: BoardComm;
  private readonly _kernelInfoTimeoutMs: number;
  private readonly _probeTimeoutMs: number;
  private readonly _cancelTimeoutMs: number;
}

/** Whether an IOPub message says a cell execution ended (busy -> idle). */
export function isCellEnd(msg: KernelMessage.IIOPubMessage): boolean {
  return (
    msg.header.msg_type === 'status' &&
    (msg.content as KernelMessage.IStatusMsg['content']).execution_state ===
      'idle' &&
    (msg.parent_header as Partial<KernelMessage.IHeader>).msg_type ===
      'execute_request'
  );
}

/**
 * The link between one kernel and the sidebar model: a control-channel probe
 * (the standard `kernel_info_request`, then `list` when the kernel lists the
 * extension's marker), a subscribed comm whose pushes feed the model, and
 * cancel requests on the control channel (answered while the notebook's cell
 * is busy).
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { oneLine, replyErrorMessage } from './format';
import { hasSparkSessionsMarker } from './kernelMarker';
import {
  COMM_TARGET,
  CONTROL_REQUEST,
  addRequest,
  cancelRequest,
  isReply,
  makeRequest,
  parseCommMessage
} from './messages';
import { SidebarModel } from './model';
import type { AddKind, Reply, Request } from './protocol';

/**
 * How long the kernel_info probe waits (ms). ipykernel answers it on the
 * control channel within milliseconds, busy or not; a kernel that does not
 * (not ipykernel) cannot have loaded the extension.
 */
export const KERNEL_INFO_TIMEOUT_MS = 1000;
/** How long the `list` probe of a kernel with the marker waits (ms). */
export const PROBE_TIMEOUT_MS = 3000;
/** How long a cancel waits for its answer (ms). */
export const CANCEL_TIMEOUT_MS = 10000;
/** How long an `add` waits for its answer (ms): it copies files. */
export const ADD_TIMEOUT_MS = 120000;
/** How long the comm waits for its kernel subshell before opening anyway (ms). */
export const SUBSHELL_WAIT_MS = 3000;

/** No reply within the time allowed. */
export class RequestTimeout extends Error {
  constructor(ms: number) {
    super(`The kernel did not answer within ${Math.round(ms / 1000)} s.`);
    this.name = 'RequestTimeout';
  }
}

let requestCounter = 0;

/**
 * Sends one request on the control channel and resolves with the reply's
 * content; rejects with RequestTimeout when none comes in `timeoutMs`.
 */
export async function sendControlRequest(
  kernel: Kernel.IKernelConnection,
  content: Request,
  timeoutMs: number
): Promise<Reply> {
  const reply = await sendControlMessage(
    kernel,
    CONTROL_REQUEST,
    content,
    timeoutMs
  );
  if (!isReply(reply)) {
    throw new Error('The kernel sent a malformed reply.');
  }
  return reply;
}

/**
 * Sends a `kernel_info_request` on the control channel (ipykernel answers it
 * there while a cell is busy) and resolves with the reply's content.
 */
export function requestKernelInfo(
  kernel: Kernel.IKernelConnection,
  timeoutMs: number
): Promise<unknown> {
  return sendControlMessage(kernel, 'kernel_info_request', {}, timeoutMs);
}

/**
 * Sends one message on the control channel and resolves with its reply's
 * content; rejects with RequestTimeout when none comes in `timeoutMs`.
 * The casts for message types JupyterLab does not type on this channel live
 * here only.
 */
function sendControlMessage(
  kernel: Kernel.IKernelConnection,
  msgType: string,
  content: unknown,
  timeoutMs: number
): Promise<unknown> {
  const msg = KernelMessage.createMessage({
    channel: 'control',
    msgType: msgType as any,
    session: kernel.clientId,
    username: kernel.username,
    content: content as any
  }) as unknown as KernelMessage.IControlMessage<any>;
  const future = kernel.sendControlMessage(msg, true, true);
  return new Promise<unknown>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      if (!settled) {
        settled = true;
        future.dispose(); // stop waiting for a reply that will not come
        reject(new RequestTimeout(timeoutMs));
      }
    }, timeoutMs);
    const settle = (reply: unknown) => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(reply);
    };
    // Resolve on the reply itself: `done` also waits for the iopub idle status.
    future.onReply = (reply: KernelMessage.IControlMessage<any>) => {
      settle(reply.content);
    };
    future.done.then(
      reply => settle(reply?.content),
      error => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      }
    );
  });
}

/** Options of a connection (the timeouts are for tests). */
export interface IConnectionOptions {
  kernelInfoTimeoutMs?: number;
  probeTimeoutMs?: number;
  cancelTimeoutMs?: number;
  addTimeoutMs?: number;
}

/** A comm request waiting for its reply. */
interface IPending {
  resolve: (reply: Reply) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
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
    this._addTimeoutMs = options.addTimeoutMs ?? ADD_TIMEOUT_MS;
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
  async cancel(
    target: { groups: string[] } | { session: string }
  ): Promise<Reply | null> {
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

  /** Whether the comm is open, so that comm requests (`add`) can be sent. */
  get isSubscribed(): boolean {
    return this._commOpen && this._comm !== null && !this._disposed;
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

  /** Closes the comm and stops listening to the kernel. */
  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._rejectPending('The connection to the kernel was closed.');
    this.kernel.iopubMessage.disconnect(this._onIOPub, this);
    this.kernel.disposed.disconnect(this.dispose, this);
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
    this._subscribe();
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

  private _subscribe(): void {
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
        this._onCommData(msg.content.data);
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

  private _onCommData(data: unknown): void {
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
        void this._refreshBoard(); // a push was missed: the whole board again
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
  private _comm: Kernel.IComm | null = null;
  private _commOpen = false;
  private _pending = new Map<string, IPending>();
  private readonly _kernelInfoTimeoutMs: number;
  private readonly _probeTimeoutMs: number;
  private readonly _cancelTimeoutMs: number;
  private readonly _addTimeoutMs: number;
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

function delay(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

function nextRequestId(): string {
  requestCounter += 1;
  return `jss-${Date.now().toString(36)}-${requestCounter}`;
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    return oneLine(error.message);
  }
  return oneLine(String(error));
}

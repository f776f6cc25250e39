/* Fakes of the JupyterLab objects the sidebar uses (only what it touches). */

/** A tiny signal, enough for connect/disconnect/emit. */
export class FakeSignal<T> {
  connect(fn: (sender: unknown, args: T) => void, thisArg?: unknown): boolean {
    this.slots.push([fn, thisArg]);
    return true;
  }
  disconnect(
    fn: (sender: unknown, args: T) => void,
    thisArg?: unknown
  ): boolean {
    this.slots = this.slots.filter(([f, t]) => f !== fn || t !== thisArg);
    return true;
  }
  emit(args: T): void {
    for (const [fn, thisArg] of [...this.slots]) {
      fn.call(thisArg, null, args);
    }
  }
  slots: Array<[(sender: unknown, args: T) => void, unknown]> = [];
}

export class FakeFuture {
  constructor(readonly msg: any) {
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }
  onReply: (msg: any) => void = () => undefined;
  done: Promise<any>;
  resolveDone!: (msg: any) => void;
  rejectDone!: (error: unknown) => void;
  disposed = false;
  dispose(): void {
    this.disposed = true;
  }
  /** The kernel answers with this reply content. */
  reply(content: unknown): void {
    const msg = { channel: 'control', content };
    this.onReply(msg);
    this.resolveDone(msg);
  }
}

export class FakeComm {
  constructor(readonly targetName: string) {}
  onMsg: (msg: any) => void = () => undefined;
  onClose: (msg: any) => void = () => undefined;
  opened: unknown[] = [];
  sent: any[] = [];
  closed = false;
  isDisposed = false;
  open(data: unknown): void {
    this.opened.push(data);
  }
  send(data: unknown): { done: Promise<void> } {
    this.sent.push(data);
    return { done: Promise.resolve() };
  }
  close(): void {
    this.closed = true;
  }
  dispose(): void {
    this.isDisposed = true;
  }
  push(data: unknown): void {
    this.onMsg({ content: { data } });
  }
}

/** The kernel_info reply content of a kernel that has loaded the extension. */
export const LOADED_KERNEL_INFO = {
  status: 'ok',
  implementation: 'ipython',
  help_links: [
    { text: 'Python Reference', url: 'https://docs.python.org/3.11' },
    {
      text: 'Spark sessions',
      url: 'https://github.com/jupyter-spark-sessions/jupyter_spark_sessions#readme'
    }
  ]
};

/** The kernel_info reply content of a kernel without the extension. */
export const PLAIN_KERNEL_INFO = {
  status: 'ok',
  implementation: 'ipython',
  help_links: [
    { text: 'Python Reference', url: 'https://docs.python.org/3.11' }
  ]
};

/**
 * A kernel connection. Control-channel `kernel_info_request`s go to
 * `infoRequests` and are answered with `kernelInfo` (never, when null);
 * every other control message goes to `futures`, answered by the test.
 */
export class FakeKernel {
  clientId = 'client-1';
  username = 'me';
  status = 'idle';
  isDisposed = false;
  iopubMessage = new FakeSignal<any>();
  disposed = new FakeSignal<void>();
  futures: FakeFuture[] = [];
  infoRequests: FakeFuture[] = [];
  kernelInfo: unknown = LOADED_KERNEL_INFO;
  comms: FakeComm[] = [];
  sendControlMessage(msg: any): FakeFuture {
    const future = new FakeFuture(msg);
    if (msg.header.msg_type === 'kernel_info_request') {
      this.infoRequests.push(future);
      const info = this.kernelInfo;
      if (info !== null) {
        // answered after the caller has set onReply, as a real kernel would
        queueMicrotask(() => future.reply(info));
      }
    } else {
      this.futures.push(future);
    }
    return future;
  }
  /** The kernel sends an IOPub status message, in answer to `parentType`. */
  emitStatus(state: 'busy' | 'idle', parentType: string): void {
    this.iopubMessage.emit({
      header: { msg_type: 'status' },
      parent_header: { msg_type: parentType },
      content: { execution_state: state }
    });
  }
  createComm(target: string): FakeComm {
    const comm = new FakeComm(target);
    this.comms.push(comm);
    return comm;
  }
}

export class FakeSessionContext {
  constructor(public kernel: FakeKernel | null) {}
  kernelDisplayName = 'Python 3 (ipykernel)';
  kernelChanged = new FakeSignal<unknown>();
  statusChanged = new FakeSignal<string>();
  get session(): { kernel: FakeKernel | null } {
    return { kernel: this.kernel };
  }
  /** The kernel's status changes (sessionContext proxies the kernel's). */
  setStatus(status: string): void {
    if (this.kernel) {
      this.kernel.status = status;
    }
    this.statusChanged.emit(status);
  }
}

export class FakePanel {
  constructor(kernel: FakeKernel | null, path = 'Untitled.ipynb') {
    this.sessionContext = new FakeSessionContext(kernel);
    this.context = { path, pathChanged: new FakeSignal<string>() };
  }
  context: { path: string; pathChanged: FakeSignal<string> };
  /** The notebook is renamed (or moved). */
  rename(path: string): void {
    this.context.path = path;
    this.context.pathChanged.emit(path);
  }
  sessionContext: FakeSessionContext;
  disposed = new FakeSignal<void>();
}

export class FakeTracker {
  currentWidget: FakePanel | null = null;
  currentChanged = new FakeSignal<FakePanel | null>();
  setCurrent(panel: FakePanel | null): void {
    this.currentWidget = panel;
    this.currentChanged.emit(panel);
  }
}

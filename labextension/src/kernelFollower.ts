/**
 * Follows the current notebook's kernel for the sidebar: which notebook is
 * current, its kernel's changes and restarts, and the connection
 * (connection.ts) to that kernel while it is up. Where it stands goes into
 * the model, which the sidebar renders.
 */
import { PathExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { KernelBoardConnection, SidebarCancelTarget } from './connection';
import { SidebarModel } from './model';

/** Kernel statuses after which the kernel has a fresh namespace: reconnect. */
const RESTART_STATUSES: ReadonlyArray<Kernel.Status> = [
  'restarting',
  'autorestarting',
  'starting',
  'dead',
  'terminating'
];

/** Kernel statuses in which the kernel answers requests. */
function isUp(status: Kernel.Status): boolean {
  return status === 'idle' || status === 'busy';
}

/** The followed kernel, for commands acting on it. */
export interface ISidebarTarget {
  connection: KernelBoardConnection;
  model: SidebarModel;
  /** The notebook's path (relative to the server root, may carry a drive prefix). */
  notebookPath: string;
}

/**
 * Keeps one connection to the current notebook's kernel (none without a
 * notebook, a kernel, or while the kernel restarts) and the model's kernel
 * and notebook names up to date.
 */
export class KernelFollower implements IDisposable {
  /** Follows the tracker's current notebook from now on (none without a tracker). */
  constructor(
    tracker: INotebookTracker | null,
    readonly model: SidebarModel
  ) {
    this._tracker = tracker;
    if (tracker) {
      tracker.currentChanged.connect(this._onCurrentChanged, this);
      this._watchPanel(tracker.currentWidget);
    }
    this._followKernel();
  }

  /** The connection to the current kernel, if any. */
  get connection(): KernelBoardConnection | null {
    return this._connection;
  }

  /** The followed notebook's kernel id ("" when none). */
  get kernelId(): string {
    return this._panel?.sessionContext?.session?.kernel?.id ?? '';
  }

  /** The followed notebook's path; undefined when no notebook is followed. */
  get notebookPath(): string | undefined {
    return this._panel?.context.path;
  }

  /**
   * What a command needs to talk to the followed kernel: its connection, the
   * model, and the path of the notebook (the kernel's working directory is its
   * directory). Null when no notebook with a running kernel is followed.
   */
  currentTarget(): ISidebarTarget | null {
    const panel = this._panel;
    const connection = this._connection;
    if (!panel || !connection || connection.isDisposed) {
      return null;
    }
    return {
      connection,
      model: this.model,
      notebookPath: panel.context?.path ?? ''
    };
  }

  /** Asks the followed kernel to cancel; nothing without a connection. */
  cancel(target: SidebarCancelTarget): void {
    if (this._connection) {
      void this._connection.cancel(target);
    }
  }

  /** Asks the followed kernel to stop a streaming query; nothing without a connection. */
  stopQuery(runId: string): void {
    if (this._connection) {
      void this._connection.stopQuery(runId);
    }
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Stops following: no tracker or notebook signals, no connection. */
  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._tracker?.currentChanged.disconnect(this._onCurrentChanged, this);
    this._watchPanel(null);
    this._closeConnection();
  }

  private _onCurrentChanged(
    _tracker: INotebookTracker,
    panel: NotebookPanel | null
  ): void {
    if (panel === this._panel) {
      return;
    }
    this._watchPanel(panel);
    this._followKernel();
  }

  private _watchPanel(panel: NotebookPanel | null): void {
    const old = this._panel;
    if (old) {
      old.sessionContext.kernelChanged.disconnect(this._followKernel, this);
      old.sessionContext.statusChanged.disconnect(this._onStatusChanged, this);
      old.context.pathChanged.disconnect(this._onPathChanged, this);
      old.disposed.disconnect(this._onPanelDisposed, this);
    }
    this._panel = panel;
    if (panel) {
      panel.sessionContext.kernelChanged.connect(this._followKernel, this);
      panel.sessionContext.statusChanged.connect(this._onStatusChanged, this);
      panel.context.pathChanged.connect(this._onPathChanged, this);
      panel.disposed.connect(this._onPanelDisposed, this);
    }
  }

  /** The followed notebook's file name, for the header. */
  private _notebookName(): string {
    const path = this._panel?.context.path ?? '';
    return path ? PathExt.basename(path) : '';
  }

  private _onPathChanged(): void {
    this.model.setNotebookName(this._notebookName());
  }

  private _onPanelDisposed(): void {
    this._watchPanel(null);
    this._followKernel();
  }

  /** (Re)connects to the current panel's kernel, or shows the no-kernel state. */
  private _followKernel(): void {
    this._closeConnection();
    const context = this._panel?.sessionContext;
    const kernel = context?.session?.kernel ?? null;
    if (!context || !kernel) {
      this.model.reset(
        this._panel ? (context?.kernelDisplayName ?? '') : null,
        this._notebookName()
      );
      if (this._panel && !kernel) {
        // A notebook with no kernel (yet): say so rather than "connecting".
        this.model.setStatus('no-kernel');
      }
      return;
    }
    this.model.reset(
      context.kernelDisplayName || kernel.name,
      this._notebookName()
    );
    if (isUp(kernel.status)) {
      this._open(kernel);
    }
    // otherwise wait for the kernel to come up (statusChanged)
  }

  private _onStatusChanged(_context: unknown, status: Kernel.Status): void {
    const kernel = this._panel?.sessionContext.session?.kernel ?? null;
    if (RESTART_STATUSES.includes(status)) {
      // Restart: the board of the old namespace is gone; show the loading state.
      if (this._connection || this.model.status !== 'connecting') {
        this._closeConnection();
        this.model.reset(
          this._panel?.sessionContext.kernelDisplayName || kernel?.name || '',
          this._notebookName()
        );
      }
      if (status === 'dead') {
        this.model.setStatus('error', 'The kernel is dead.');
      }
      return;
    }
    if (isUp(status) && kernel) {
      if (this._connection === null || this._connection.kernel !== kernel) {
        this._closeConnection();
        this.model.reset(
          this._panel?.sessionContext.kernelDisplayName || kernel.name,
          this._notebookName()
        );
        this._open(kernel);
      }
    }
  }

  private _open(kernel: Kernel.IKernelConnection): void {
    const connection = new KernelBoardConnection(kernel, this.model);
    this._connection = connection;
    void connection.start();
  }

  private _closeConnection(): void {
    this._connection?.dispose();
    this._connection = null;
  }

  private readonly _tracker: INotebookTracker | null;
  private _panel: NotebookPanel | null = null;
  private _connection: KernelBoardConnection | null = null;
  private _disposed = false;
}

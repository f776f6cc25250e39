/**
 * The Spark Sessions sidebar widget: it follows the current notebook's kernel
 * (kernelFollower.ts) into its model, and renders the model (boardView.ts)
 * at each change, with plain DOM.
 */
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { INotebookTracker } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { renderBoard } from './boardView';
import { KernelBoardConnection } from './connection';
import { ElapsedTicker } from './elapsedTicker';
import { ISidebarTarget, KernelFollower } from './kernelFollower';
import { SidebarModel } from './model';
import {
  ISharedDriverState,
  SHARED_DRIVER_ROUTE,
  renderSharedDriver
} from './sharedDriver';

export type { ISidebarTarget };

/** The id of the Spark Sessions sidebar, shared with the browser tests. */
export const SIDEBAR_ID = 'jupyter-spark-sessions-sidebar';

const SPARK_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M12 2l2.4 6.3L21 9l-5 4.4L17.5 21 12 17.3 6.5 21 8 13.4 3 9l6.6-.7z"/>
</svg>`;

/** The sidebar's icon. */
export const sparkIcon = new LabIcon({
  name: 'jupyter-spark-sessions:spark',
  svgstr: SPARK_SVG
});

/** Options of the sidebar (the base URL is for tests). */
export interface ISidebarOptions {
  /** The Jupyter server's base URL, under which the server extension serves Spark's UI (`spark-sessions/ui/{port}/`). */
  baseUrl?: string;
  /** Told when the sidebar is shown (true) or hidden (false) in the page. */
  onShown?: (shown: boolean) => void;
  /** Reads the shared driver's state (tests); default: the server extension's REST route. */
  fetchSharedDriver?: () => Promise<ISharedDriverState | null>;
  /** Asks a kernel to cancel a session's work (tests); default: the REST relay. */
  cancelShared?: (kernelId: string, session: string) => Promise<void>;
}

/** Seconds between two reads of the shared driver's state while the sidebar is shown. */
const SHARED_POLL_MS = 3000;

/** The sidebar widget. */
export class SparkSessionsSidebar extends Widget {
  constructor(
    tracker: INotebookTracker | null,
    model = new SidebarModel(),
    options: ISidebarOptions = {}
  ) {
    super();
    this._baseUrl = options.baseUrl ?? PageConfig.getBaseUrl();
    this._onShown = options.onShown ?? (() => undefined);
    this._fetchShared =
      options.fetchSharedDriver ?? (() => fetchSharedDriver());
    this._cancelShared = options.cancelShared ?? relayCancel;
    this.id = SIDEBAR_ID;
    this.node.append(this._boardNode, this._sharedNode);
    this.addClass('jp-SparkSessions-panel');
    this.title.label = 'Spark';
    this.title.caption = 'Spark Sessions';
    this.title.icon = sparkIcon;
    this.model = model;
    // The follower sets the model's first state; rendering needs the follower,
    // so it starts listening after, with one render of that state.
    this._follower = new KernelFollower(tracker, model);
    this._disconnectModel = model.connect(() => this._render());
    this._render();
  }

  readonly model: SidebarModel;

  /** The connection to the current kernel, if any. */
  get connection(): KernelBoardConnection | null {
    return this._follower.connection;
  }

  /**
   * What a command needs to talk to the followed kernel: its connection, the
   * model, and the path of the notebook (the kernel's working directory is its
   * directory). Null when no notebook with a running kernel is followed.
   */
  currentTarget(): ISidebarTarget | null {
    return this._follower.currentTarget();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._follower.dispose();
    this._ticker.stop();
    this._stopSharedPoll();
    this._disconnectModel();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._onShown(true);
    // Hidden, nothing moved with the clock: now it does, from the time now.
    this._ticker.tick();
    this._runTicker();
    this._stopSharedPoll();
    void this._pollShared();
    this._sharedTimer = window.setInterval(
      () => void this._pollShared(),
      SHARED_POLL_MS
    );
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._onShown(false);
    this._ticker.stop();
    this._stopSharedPoll();
  }

  /** Reads and shows the shared driver's state now (also every few seconds while shown). */
  async refreshSharedDriver(): Promise<void> {
    await this._pollShared();
  }

  private async _pollShared(): Promise<void> {
    let state: ISharedDriverState | null = null;
    try {
      state = await this._fetchShared();
    } catch {
      state = null; // a server without the extension's route: no section
    }
    this._sharedState = state;
    this._renderShared();
  }

  private _renderShared(): void {
    if (this.isDisposed) {
      return;
    }
    this._sharedKernelId = this._follower.kernelId;
    renderSharedDriver(this._sharedNode, this._sharedState, {
      baseUrl: this._baseUrl,
      currentKernelId: this._sharedKernelId,
      cancel: (kernelId, session) => {
        void this._cancelShared(kernelId, session).finally(
          () => void this._pollShared()
        );
      }
    });
  }

  private _stopSharedPoll(): void {
    if (this._sharedTimer !== null) {
      window.clearInterval(this._sharedTimer);
      this._sharedTimer = null;
    }
  }

  private _render(): void {
    // A group gone from the board (a new kernel numbers its cells again) is
    // forgotten: a later group of the same id starts collapsed.
    const shownIds = new Set(this.model.board?.groups.map(g => g.id) ?? []);
    for (const id of [...this._expanded]) {
      if (!shownIds.has(id)) {
        this._expanded.delete(id);
      }
    }
    const follower = this._follower;
    const ticker = this._ticker;
    ticker.clear();
    renderBoard(
      this._boardNode,
      {
        model: this.model,
        now: Date.now() / 1000,
        baseUrl: this._baseUrl,
        connected: follower.connection !== null,
        cancel: target => follower.cancel(target),
        stopQuery: runId => follower.stopQuery(runId),
        everySecond: refresh => ticker.add(refresh),
        isExpanded: id => this._expanded.has(id),
        toggleExpanded: id => {
          if (!this._expanded.delete(id)) {
            this._expanded.add(id);
          }
          this._render();
        }
      },
      follower.notebookPath
    );
    this._runTicker();
    if (follower.kernelId !== this._sharedKernelId) {
      this._renderShared(); // "(this notebook)" follows the followed kernel
    }
  }

  /** The clock's pace: what is shown moves with it only while the sidebar is. */
  private _runTicker(): void {
    this._ticker.run(
      !this.isVisible
        ? 'off'
        : this.model.hasActiveGroups()
          ? 'running'
          : 'idle'
    );
  }

  private readonly _follower: KernelFollower;
  private readonly _ticker = new ElapsedTicker();
  /** Groups whose every job the user asked to see (by id). */
  private readonly _expanded = new Set<string>();
  private readonly _baseUrl: string;
  private readonly _onShown: (shown: boolean) => void;
  private readonly _disconnectModel: () => void;
  private readonly _boardNode = document.createElement('div');
  private readonly _sharedNode = document.createElement('div');
  private readonly _fetchShared: () => Promise<ISharedDriverState | null>;
  private readonly _cancelShared: (
    kernelId: string,
    session: string
  ) => Promise<void>;
  private _sharedState: ISharedDriverState | null = null;
  private _sharedTimer: number | null = null;
  /** The followed kernel when the section was last drawn. */
  private _sharedKernelId = '';
}

/** The shared driver's state from the server extension (null: no route or no reply). */
async function fetchSharedDriver(): Promise<ISharedDriverState | null> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, SHARED_DRIVER_ROUTE);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    return null;
  }
  return (await response.json()) as ISharedDriverState;
}

/** A cancel of a session's work, sent to its kernel through the REST relay. */
async function relayCancel(kernelId: string, session: string): Promise<void> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(
    settings.baseUrl,
    'jupyter-spark-sessions/api/kernels',
    encodeURIComponent(kernelId),
    'requests'
  );
  await ServerConnection.makeRequest(
    url,
    {
      method: 'POST',
      body: JSON.stringify({
        version: 1,
        action: 'cancel',
        session,
        source: 'sidebar'
      })
    },
    settings
  );
}

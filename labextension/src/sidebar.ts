/**
 * The Spark Sessions sidebar: follows the current notebook's kernel and renders
 * its board with plain DOM: each session with its timeline and its job groups,
 * each group's jobs with their running stages, links to Spark's UI.
 */
import { PageConfig, PathExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { KernelBoardConnection } from './connection';
import { el, externalLink } from './dom';
import {
  codeSpans,
  elapsedSeconds,
  formatBytes,
  formatDuration,
  progress,
  tasksDone
} from './format';
import { STATUS_LABELS, SidebarModel } from './model';
import type { Group, Job, Session, SessionFile, Stage } from './protocol';
import { sparkJobUrl, sparkJobsUrl } from './sparkUi';
import { renderTimeline } from './timelineView';

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

/** Appends a message, its `backticked` parts as <code>. */
function appendMessage(parent: HTMLElement, message: string): void {
  for (const span of codeSpans(message)) {
    parent.appendChild(
      span.code
        ? el('code', undefined, span.text)
        : document.createTextNode(span.text)
    );
  }
}

function sessionsLink(
  href: string,
  text: string,
  title: string
): HTMLAnchorElement {
  return externalLink(href, text, title, 'jp-SparkSessions-link');
}

/** Options of the sidebar (the base URL is for tests). */
export interface ISidebarOptions {
  /** The Jupyter server's base URL, where jupyter-server-proxy serves Spark's UI. */
  baseUrl?: string;
}

/** The followed kernel, for commands acting on it. */
export interface ISidebarTarget {
  connection: KernelBoardConnection;
  model: SidebarModel;
  /** The notebook's path (relative to the server root, may carry a drive prefix). */
  notebookPath: string;
}

/** The sidebar widget. */
export class SparkSessionsSidebar extends Widget {
  constructor(
    tracker: INotebookTracker | null,
    model = new SidebarModel(),
    options: ISidebarOptions = {}
  ) {
    super();
    this._baseUrl = options.baseUrl ?? PageConfig.getBaseUrl();
    this.id = SIDEBAR_ID;
    this.addClass('jp-SparkSessions-panel');
    this.title.label = 'Spark';
    this.title.caption = 'Spark Sessions';
    this.title.icon = sparkIcon;
    this.model = model;
    this._tracker = tracker;
    this._disconnectModel = model.connect(() => this._render());
    if (tracker) {
      tracker.currentChanged.connect(this._onCurrentChanged, this);
      this._watchPanel(tracker.currentWidget);
    }
    this._followKernel(); // renders, whatever the state
  }

  readonly model: SidebarModel;

  /** The connection to the current kernel, if any. */
  get connection(): KernelBoardConnection | null {
    return this._connection;
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

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._tracker?.currentChanged.disconnect(this._onCurrentChanged, this);
    this._watchPanel(null);
    this._closeConnection();
    this._stopTimer();
    this._disconnectModel();
    super.dispose();
  }

  // -- following the current notebook's kernel --------------------------------------

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

  private _cancel(target: { groups: string[] } | { session: string }): void {
    if (this._connection) {
      void this._connection.cancel(target);
    }
  }

  // -- rendering ----------------------------------------------------------------------

  private _render(): void {
    const model = this.model;
    const root = this.node;
    root.textContent = '';

    root.appendChild(this._renderHeader());

    if (model.error) {
      const error = el('div', 'jp-SparkSessions-error', model.error);
      error.dataset.testid = 'jss-error';
      error.title = model.error;
      root.appendChild(error);
    }

    const board = model.board;
    if (board?.error) {
      const warning = el('div', 'jp-SparkSessions-warning', board.error);
      warning.dataset.testid = 'jss-board-warning';
      root.appendChild(warning);
    }

    const empty = model.emptyMessage();
    if (empty !== null) {
      const message = el('p', 'jp-SparkSessions-empty');
      appendMessage(message, empty);
      message.dataset.testid = 'jss-empty';
      root.appendChild(message);
      if (model.status === 'no-kernel') {
        const hint = el('p', 'jp-SparkSessions-hint');
        appendMessage(
          hint,
          'In the notebook, run `%load_ext jupyter_spark_sessions`, ' +
            'then `%spark_session create NAME`.'
        );
        root.appendChild(hint);
      }
    }

    const now = Date.now() / 1000;
    this._elapsed = [];
    this._timelines = [];
    if (board) {
      for (const session of model.sessions()) {
        root.appendChild(this._renderSession(session, now));
      }
      const orphans = model.orphanGroups();
      if (orphans.length) {
        const section = el('div', 'jp-SparkSessions-sessionBlock');
        section.appendChild(
          el('div', 'jp-SparkSessions-orphans', 'Groups of removed sessions')
        );
        section.appendChild(this._renderGroups(orphans, now, null));
        root.appendChild(section);
      }
      if (board.other_running_jobs > 0) {
        root.appendChild(
          el(
            'div',
            'jp-SparkSessions-note',
            `${board.other_running_jobs} running job(s) outside managed sessions.`
          )
        );
      }
    }

    if (model.hasActiveGroups()) {
      this._startTimer();
    } else {
      this._stopTimer();
    }
  }

  /** The title, the connection status, and the notebook and kernel followed. */
  private _renderHeader(): HTMLElement {
    const model = this.model;
    const header = el('div', 'jp-SparkSessions-header');
    const top = el('div', 'jp-SparkSessions-headerTop');
    top.appendChild(el('span', 'jp-SparkSessions-title', 'Spark Sessions'));
    const status = el(
      'span',
      'jp-SparkSessions-status',
      STATUS_LABELS[model.status]
    );
    status.dataset.testid = 'jss-status';
    status.dataset.status = model.status;
    top.appendChild(status);
    header.appendChild(top);
    if (model.kernelName !== null) {
      const followed = el('div', 'jp-SparkSessions-followed');
      const notebook = el(
        'span',
        'jp-SparkSessions-notebook',
        model.notebookName || 'Untitled'
      );
      notebook.dataset.testid = 'jss-notebook';
      notebook.title = this._panel?.context.path ?? model.notebookName;
      followed.appendChild(notebook);
      const kernel = el(
        'span',
        'jp-SparkSessions-kernel',
        model.kernelName || 'No kernel'
      );
      kernel.dataset.testid = 'jss-kernel';
      kernel.title = 'The notebook\u2019s kernel';
      followed.appendChild(kernel);
      header.appendChild(followed);
    }
    return header;
  }

  private _renderSession(session: Session, now: number): HTMLElement {
    const block = el('div', 'jp-SparkSessions-sessionBlock');
    const row = el('div', 'jp-SparkSessions-session');
    row.dataset.testid = 'jss-session';
    row.dataset.session = session.name;

    const info = el('div', 'jp-SparkSessions-sessionInfo');
    info.appendChild(el('span', 'jp-SparkSessions-sessionName', session.name));
    const origin = el('span', 'jp-SparkSessions-tag', session.origin);
    origin.dataset.origin = session.origin;
    info.appendChild(origin);
    info.appendChild(el('span', 'jp-SparkSessions-tag', session.backend));
    const master = el('span', 'jp-SparkSessions-master', session.master);
    master.title = session.directory
      ? `${session.master}\n${session.directory}`
      : session.master;
    info.appendChild(master);
    const jobsUrl = sparkJobsUrl(this._baseUrl, session.ui_url ?? '');
    if (jobsUrl !== null) {
      const link = sessionsLink(
        jobsUrl,
        'Spark UI \u2197',
        `The Spark UI of ${session.name}'s driver (${session.ui_url}), through the Jupyter server`
      );
      link.dataset.testid = 'jss-session-ui-link';
      info.appendChild(link);
    }
    row.appendChild(info);
    if (session.disconnected) {
      const warning = el(
        'div',
        'jp-SparkSessions-error',
        `Disconnected: ${session.disconnected}`
      );
      warning.dataset.testid = 'jss-session-disconnected';
      info.appendChild(warning);
    }

    const running = this.model.runningGroupIds(session.name);
    const cancelAll = el('button', 'jp-SparkSessions-button', 'Cancel all');
    cancelAll.dataset.testid = 'jss-cancel-session';
    cancelAll.title = `Cancel every running job group of ${session.name}`;
    cancelAll.disabled = running.length === 0 || this._connection === null;
    cancelAll.addEventListener('click', () =>
      this._cancel({ session: session.name })
    );
    row.appendChild(cancelAll);
    block.appendChild(row);
    if (session.files?.length) {
      block.appendChild(this._renderFiles(session.files));
    }

    const groups = this.model.groupsOf(session.name);
    if (groups.length) {
      const timeline = el('div', 'jp-SparkSessions-timeline');
      timeline.dataset.testid = 'jss-timeline';
      timeline.dataset.session = session.name;
      this._timelines.push([timeline, groups]);
      this._drawTimeline(timeline, groups, now);
      block.appendChild(timeline);
      block.appendChild(this._renderGroups(groups, now, session));
    } else {
      block.appendChild(el('div', 'jp-SparkSessions-note', 'No jobs yet.'));
    }
    return block;
  }

  private _renderFiles(files: SessionFile[]): HTMLElement {
    const list = el('ul', 'jp-SparkSessions-files');
    for (const file of files) {
      const item = el(
        'li',
        'jp-SparkSessions-file',
        `${file.name} (${file.kind}, ${formatBytes(file.size)})`
      );
      item.dataset.testid = 'jss-session-file';
      item.dataset.file = file.name;
      list.appendChild(item);
    }
    return list;
  }

  /** Redraws a session's timeline (at each render, and each second while a group runs). */
  private _drawTimeline(
    container: HTMLElement,
    groups: Group[],
    now: number
  ): void {
    container.textContent = '';
    renderTimeline(container, groups, now, group =>
      this.model.displayState(group)
    );
  }

  private _renderGroups(
    groups: Group[],
    now: number,
    session: Session | null
  ): HTMLElement {
    const list = el('div', 'jp-SparkSessions-groups');
    for (const group of groups) {
      list.appendChild(this._renderGroup(group, now, session));
    }
    return list;
  }

  private _renderGroup(
    group: Group,
    now: number,
    session: Session | null
  ): HTMLElement {
    const state = this.model.displayState(group);
    const row = el('div', 'jp-SparkSessions-group');
    row.dataset.testid = 'jss-group';
    row.dataset.group = group.id;
    row.dataset.state = state;

    const top = el('div', 'jp-SparkSessions-groupTop');
    const groupId = el('span', 'jp-SparkSessions-groupId', group.id);
    groupId.title = group.id;
    top.appendChild(groupId);
    const badge = el('span', `jp-SparkSessions-badge jp-mod-${state}`, state);
    top.appendChild(badge);
    const elapsed = el(
      'span',
      'jp-SparkSessions-elapsed',
      formatDuration(elapsedSeconds(group, now))
    );
    elapsed.title = 'Elapsed time';
    this._elapsed.push([elapsed, group]);
    top.appendChild(elapsed);
    const cancel = el('button', 'jp-SparkSessions-button', 'Cancel');
    cancel.dataset.testid = 'jss-cancel-group';
    cancel.title = `Cancel the jobs of ${group.id}`;
    cancel.disabled = state !== 'running' || this._connection === null;
    cancel.addEventListener('click', () =>
      this._cancel({ groups: [group.id] })
    );
    top.appendChild(cancel);
    row.appendChild(top);

    if (group.description) {
      const description = el(
        'div',
        'jp-SparkSessions-description',
        group.description
      );
      description.title = group.description;
      row.appendChild(description);
    }

    for (const job of group.jobs) {
      row.appendChild(this._renderJob(job, session));
    }
    if (group.tasks_still_running > 0) {
      row.appendChild(
        el(
          'div',
          'jp-SparkSessions-note',
          `${group.tasks_still_running} task(s) still stopping on executors.`
        )
      );
    }
    return row;
  }

  private _renderJob(job: Job, session: Session | null): HTMLElement {
    const block = el('div', 'jp-SparkSessions-jobBlock');
    const line = el('div', 'jp-SparkSessions-job');
    line.title = job.name;
    // A Connect operation's number is the board's, not a Spark job id.
    const jobUrl =
      session && !job.operation_id
        ? sparkJobUrl(this._baseUrl, session.ui_url ?? '', job.id)
        : null;
    const label =
      jobUrl !== null
        ? sessionsLink(
            jobUrl,
            `Job ${job.id}`,
            `${job.name}\nOpen job ${job.id} in the Spark UI`
          )
        : el('span', undefined, `Job ${job.id}`);
    label.classList.add('jp-SparkSessions-jobLabel');
    if (jobUrl !== null) {
      label.dataset.testid = 'jss-job-ui-link';
    }
    line.appendChild(label);
    const bar = el('progress', 'jp-SparkSessions-progress');
    const done = tasksDone(job.tasks);
    bar.dataset.testid = 'jss-job-progress';
    bar.dataset.completed = String(done);
    bar.dataset.total = String(job.tasks.total);
    bar.dataset.status = job.status;
    bar.max = 1;
    bar.value = progress(job);
    line.appendChild(bar);
    let text = `${done}/${job.tasks.total} tasks`;
    if (job.tasks.failed > 0) {
      text += `, ${job.tasks.failed} failed`;
    }
    line.appendChild(el('span', 'jp-SparkSessions-jobTasks', text));
    block.appendChild(line);
    for (const stage of job.stages ?? []) {
      block.appendChild(this._renderStage(stage));
    }
    return block;
  }

  /** A running stage: its own bar, and how many of its tasks run now. */
  private _renderStage(stage: Stage): HTMLElement {
    const line = el('div', 'jp-SparkSessions-stage');
    line.title = stage.name;
    const attempt = stage.attempt > 0 ? ` (attempt ${stage.attempt + 1})` : '';
    line.appendChild(
      el('span', 'jp-SparkSessions-stageLabel', `Stage ${stage.id}${attempt}`)
    );
    const bar = el('progress', 'jp-SparkSessions-progress jp-mod-stage');
    const done = tasksDone(stage.tasks);
    bar.dataset.testid = 'jss-stage-progress';
    bar.dataset.stage = String(stage.id);
    bar.dataset.completed = String(done);
    bar.dataset.total = String(stage.tasks.total);
    bar.dataset.active = String(stage.tasks.active);
    bar.max = 1;
    bar.value = progress(stage);
    line.appendChild(bar);
    line.appendChild(
      el(
        'span',
        'jp-SparkSessions-jobTasks',
        `${done}/${stage.tasks.total}, ${stage.tasks.active} running`
      )
    );
    return line;
  }

  // -- elapsed-time ticker (display only: data comes from comm pushes) ----------------

  private _startTimer(): void {
    if (this._timer === null) {
      this._timer = window.setInterval(() => this._tick(), 1000);
    }
  }

  /**
   * Updates the elapsed times and the timelines only (a full render would
   * disturb the buttons).
   */
  private _tick(): void {
    const now = Date.now() / 1000;
    for (const [node, group] of this._elapsed) {
      node.textContent = formatDuration(elapsedSeconds(group, now));
    }
    for (const [container, groups] of this._timelines) {
      this._drawTimeline(container, groups, now);
    }
  }

  private _stopTimer(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  private _tracker: INotebookTracker | null;
  private _panel: NotebookPanel | null = null;
  private _connection: KernelBoardConnection | null = null;
  private _timer: number | null = null;
  private _elapsed: Array<[HTMLElement, Group]> = [];
  private _timelines: Array<[HTMLElement, Group[]]> = [];
  private readonly _baseUrl: string;
  private _disconnectModel: () => void;
}

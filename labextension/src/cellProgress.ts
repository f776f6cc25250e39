/**
 * The in-cell progress view: renders the kernel's
 * `application/vnd.jupyter-spark-sessions.cell+json` output (one per cell
 * running Spark jobs; the kernel replaces it with update_display_data as the
 * board changes) with a progress bar per group and a Cancel that goes over the
 * control channel, so it works while the cell is busy. Under each group's line,
 * what happened inside it (insideView.ts): its stages, slot chart and findings.
 *
 * The renderer factory is added to each notebook's own rendermime registry, so
 * a Cancel knows the notebook, hence the kernel, it belongs to. Works the same
 * in JupyterLab and Notebook 7 (both have the notebook tracker).
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { PageConfig } from '@jupyterlab/coreutils';
import { Kernel } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { CANCEL_TIMEOUT_MS } from './connection';
import { sendControlRequest } from './controlChannel';
import { el, externalLink } from './dom';
import { oneLine } from './format';
import { insideSummaryText, isEmptyInside, renderInside } from './insideView';
import { cancelRequest } from './messages';
import type {
  CellProgress,
  CellProgressGroup,
  CellTasks,
  GroupInside
} from './protocol';
import { sparkJobUrl, sparkJobsUrl, sparkPageUrl } from './sparkUi';

export const CELL_PROGRESS_MIME =
  'application/vnd.jupyter-spark-sessions.cell+json';

/** Before the HTML and text renderings of the same output. */
const RANK = 10;

/** `1,200/20,000 tasks (2 running)`, as the kernel's text rendering says it. */
export function tasksText(tasks: CellTasks): string {
  const { done, total, active, failed } = tasks;
  let text = `${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} tasks`;
  if (active) {
    text += ` (${active} running)`;
  }
  if (failed) {
    text += `, ${failed} failed`;
  }
  return text;
}

/** `3 jobs done` ('' before the first one is done), as the kernel says it. */
export function jobsDoneText(group: CellProgressGroup): string {
  const done = group.jobs_done;
  return done ? `${done} job${done === 1 ? '' : 's'} done` : '';
}

/**
 * The running view's tasks: the running job's own (a cell's later jobs are not
 * known yet, so no total over its jobs would be true); before any job is done
 * and with none running, the group's; between two jobs, none.
 */
export function runningTasks(group: CellProgressGroup): CellTasks | null {
  if (group.job) {
    return group.job.tasks;
  }
  return group.jobs_done ? null : group.tasks;
}

/** Seconds shown: the kernel's figure, plus the time since it was sent while the group runs. */
export function shownElapsed(
  group: CellProgressGroup,
  final: boolean,
  secondsSinceReceived: number
): number {
  const ticking = !final && group.cancellable;
  return group.elapsed + (ticking ? Math.max(0, secondsSinceReceived) : 0);
}

/** `12 s`, `1 min 05 s`. */
export function formatSeconds(seconds: number, precise: boolean): string {
  if (seconds < 60) {
    return precise ? `${seconds.toFixed(1)} s` : `${Math.floor(seconds)} s`;
  }
  const minutes = Math.floor(seconds / 60);
  const rest = Math.floor(seconds % 60);
  return `${minutes} min ${String(rest).padStart(2, '0')} s`;
}

/** The one summary line of an ended group, as the kernel's text says it. */
export function summaryText(group: CellProgressGroup): string {
  const jobs = `${group.jobs} job${group.jobs === 1 ? '' : 's'}`;
  return [
    `${group.state}`,
    jobs,
    tasksText(group.tasks),
    formatSeconds(group.elapsed, true),
    ...(group.error ? [group.error] : [])
  ].join(' · ');
}

function link(href: string | null, text: string, title: string): HTMLElement {
  if (href === null) {
    return el('span', '', text);
  }
  return externalLink(href, text, title, 'jp-SparkCell-link');
}

/**
 * An ended group's inside under its summary: collapsed ("3 stages") unless the
 * diagnosis found something, so that a notebook of many quick Spark cells
 * does not show a table under each.
 */
export function endedInside(inside: GroupInside): HTMLElement {
  const details = el('details', 'jp-SparkCell-insideDetails');
  details.dataset.testid = 'spark-cell-inside';
  details.open = inside.findings.length > 0;
  details.appendChild(
    el('summary', 'jp-SparkCell-insideSummary', insideSummaryText(inside))
  );
  details.appendChild(renderInside(inside));
  return details;
}

/** Where a Cancel goes: the kernel of the notebook showing the output. */
export type KernelOf = () => Kernel.IKernelConnection | null;

/** One output's view. */
export class CellProgressRenderer
  extends Widget
  implements IRenderMime.IRenderer
{
  private _data: CellProgress | null = null;
  private _receivedAt = 0;
  private _timer: number | undefined;
  private _cancelling = new Set<string>();
  private _errors = new Map<string, string>();
  /** Each group's inside, drawn once per model: the clock's redraws reuse it. */
  private _insides = new Map<string, HTMLElement>();

  constructor(private readonly _kernelOf: KernelOf) {
    super();
    this.addClass('jp-SparkCell');
    this.node.dataset.testid = 'spark-cell-progress';
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._data = model.data[CELL_PROGRESS_MIME] as unknown as CellProgress;
    this._receivedAt = Date.now();
    this._insides.clear();
    for (const group of this._data.groups) {
      if (!group.cancellable) {
        this._cancelling.delete(group.id);
      }
      if (group.inside && !isEmptyInside(group.inside)) {
        const inside = this._data.final
          ? endedInside(group.inside)
          : renderInside(group.inside);
        inside.classList.add('jp-SparkCell-inside');
        inside.dataset.group = group.id;
        this._insides.set(group.id, inside);
      }
    }
    this._draw();
    this._tick(!this._data.final);
    return Promise.resolve();
  }

  dispose(): void {
    this._tick(false);
    super.dispose();
  }

  private _tick(on: boolean): void {
    if (on && this._timer === undefined) {
      this._timer = window.setInterval(() => this._draw(), 1000);
    } else if (!on && this._timer !== undefined) {
      window.clearInterval(this._timer);
      this._timer = undefined;
    }
  }

  private _draw(): void {
    const data = this._data;
    if (!data) {
      return;
    }
    const since = (Date.now() - this._receivedAt) / 1000;
    // The inside goes after the group's line, not in it: the line stays one
    // wrapping row of figures.
    const rows = data.groups.flatMap(g => {
      const inside = this._insides.get(g.id);
      const row = this._row(g, data.final, since);
      if (inside && data.final) {
        row.appendChild(inside); // "▸ 3 stages" at the end of the summary line
        return [row];
      }
      return inside ? [row, inside] : [row];
    });
    this.node.replaceChildren(...rows);
    this.node.classList.toggle('jp-mod-final', data.final);
  }

  private _row(
    group: CellProgressGroup,
    final: boolean,
    since: number
  ): HTMLElement {
    const baseUrl = PageConfig.getBaseUrl();
    const row = el('div', `jp-SparkCell-group jp-mod-${group.state}`);
    row.dataset.testid = 'spark-cell-group';
    row.dataset.group = group.id;
    row.dataset.state = group.state;
    row.append(
      link(
        sparkJobsUrl(baseUrl, group.ui_url),
        group.id,
        "This session's jobs in Spark's UI"
      )
    );
    if (final) {
      const summary = el('span', 'jp-SparkCell-summary', summaryText(group));
      summary.dataset.testid = 'spark-cell-summary';
      row.append(summary);
      return row;
    }
    // The running job's own progress; between two jobs, a bar without a figure
    // (at work, how far unknown).
    const counts = runningTasks(group);
    const bar = el('progress', 'jp-SparkCell-bar');
    bar.dataset.testid = 'spark-cell-bar';
    if (counts) {
      bar.max = Math.max(counts.total, 1);
      bar.value = counts.done;
    }
    row.append(el('span', 'jp-SparkCell-state', group.state));
    const jobsDone = jobsDoneText(group);
    if (jobsDone) {
      const done = el('span', 'jp-SparkCell-jobsDone', jobsDone);
      done.dataset.testid = 'spark-cell-jobs-done';
      row.append(done);
    }
    row.append(bar);
    if (counts) {
      const tasks = el('span', 'jp-SparkCell-tasks', tasksText(counts));
      tasks.dataset.testid = 'spark-cell-tasks';
      row.append(tasks);
    }
    const elapsed = el(
      'span',
      'jp-SparkCell-elapsed',
      formatSeconds(shownElapsed(group, final, since), false)
    );
    row.append(elapsed);
    if (group.job) {
      // A Connect session's job numbers are the board's: its operations page.
      const job = link(
        group.operations_page
          ? sparkPageUrl(baseUrl, group.ui_url, group.operations_page)
          : sparkJobUrl(baseUrl, group.ui_url, group.job.id),
        `job ${group.job.id}`,
        group.job.name
      );
      job.classList.add('jp-SparkCell-job');
      const stage = group.stage
        ? ` · stage ${group.stage.id}: ${group.stage.done}/${group.stage.total}`
        : '';
      const detail = el(
        'span',
        'jp-SparkCell-detail',
        `${group.job.name}${stage}`
      );
      row.append(job, detail);
    }
    if (group.cancellable) {
      row.append(this._cancelButton(group));
    }
    const error = this._errors.get(group.id);
    if (error) {
      row.append(el('span', 'jp-SparkCell-error', error));
    }
    return row;
  }

  private _cancelButton(group: CellProgressGroup): HTMLButtonElement {
    const pending = this._cancelling.has(group.id);
    const button = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-warn jp-SparkCell-cancel',
      pending ? 'Cancelling…' : 'Cancel'
    );
    button.dataset.testid = 'spark-cell-cancel';
    button.title = `Cancel job group ${group.id} (only this cell's jobs in session ${group.session})`;
    button.disabled = pending;
    button.addEventListener('click', () => void this._cancel(group.id));
    return button;
  }

  private async _cancel(groupId: string): Promise<void> {
    const kernel = this._kernelOf();
    this._errors.delete(groupId);
    if (!kernel) {
      this._errors.set(groupId, 'This notebook has no kernel to ask.');
      this._draw();
      return;
    }
    this._cancelling.add(groupId);
    this._draw();
    try {
      const reply = await sendControlRequest(
        kernel,
        cancelRequest({ groups: [groupId] }, undefined, 'cell'),
        CANCEL_TIMEOUT_MS
      );
      if (reply.status === 'error') {
        throw new Error(reply.error.message);
      }
    } catch (error) {
      this._cancelling.delete(groupId);
      this._errors.set(
        groupId,
        oneLine(String((error as Error).message ?? error))
      );
    }
    this._draw();
  }
}

/** The factory of one notebook's views. */
export function cellProgressFactory(
  panel: NotebookPanel
): IRenderMime.IRendererFactory {
  return {
    safe: true, // shows text only; its one action is a Cancel the user clicks
    mimeTypes: [CELL_PROGRESS_MIME],
    defaultRank: RANK,
    createRenderer: () =>
      new CellProgressRenderer(
        () => panel.sessionContext.session?.kernel ?? null
      )
  };
}

/** Give every notebook, now and later, the view's renderer. */
export function addCellProgressRenderers(tracker: INotebookTracker): void {
  const add = (panel: NotebookPanel) => {
    panel.content.rendermime.addFactory(cellProgressFactory(panel), RANK);
  };
  tracker.forEach(add);
  tracker.widgetAdded.connect((_, panel) => add(panel));
}

/**
 * The in-cell view of a streaming query: renders the kernel's
 * `application/vnd.jupyter-spark-sessions.query+json` output, shown under the
 * cell that started the query and replaced by update_display_data as its
 * figures change, after the cell returned too. While it runs: its name and
 * state, its figures, the sparkline of its rates, and a Stop that goes over
 * the control channel like the sidebar's; once it ended, one summary line.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import type { KernelOf } from './cellProgress';
import { CANCEL_TIMEOUT_MS } from './connection';
import { sendControlRequest } from './controlChannel';
import { el } from './dom';
import { errorMessage, replyErrorMessage } from './format';
import { nextRequestId, stopQueryRequest } from './messages';
import type { CellQuery, QueryState } from './protocol';
import { queryFigures, queryLabel } from './queries';
import { renderSparkline } from './queryView';

export const CELL_QUERY_MIME =
  'application/vnd.jupyter-spark-sessions.query+json';

/** One query's view under its cell. */
export class CellQueryRenderer extends Widget implements IRenderMime.IRenderer {
  private _data: CellQuery | null = null;
  /** Stop was clicked and Spark has not reported the end yet. */
  private _stopping = false;
  private _error = '';

  constructor(private readonly _kernelOf: KernelOf) {
    super();
    this.addClass('jp-SparkCell');
    this.addClass('jp-SparkCell-query');
    this.node.dataset.testid = 'spark-cell-query';
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._data = model.data[CELL_QUERY_MIME] as unknown as CellQuery;
    if (this._data.query.state !== 'active') {
      this._stopping = false;
    }
    this._draw();
    return Promise.resolve();
  }

  /** What the view shows of the query's state: stopping from the click on. */
  get state(): QueryState | null {
    const query = this._data?.query;
    if (!query) {
      return null;
    }
    return this._stopping && query.state === 'active'
      ? 'stopping'
      : query.state;
  }

  private _draw(): void {
    const data = this._data;
    const state = this.state;
    if (!data || !state) {
      return;
    }
    const query = data.query;
    const label = queryLabel(query);
    this.node.dataset.state = state;
    this.node.dataset.query = label;
    this.node.classList.toggle('jp-mod-final', data.final);
    if (data.final) {
      const summary = el('div', 'jp-SparkCell-summary', data.summary);
      summary.dataset.testid = 'spark-cell-query-summary';
      this.node.replaceChildren(summary);
      return;
    }
    const top = el('div', 'jp-SparkCell-group');
    const name = el('span', 'jp-SparkSessions-queryName', label);
    name.title = `id = ${query.id}\nrunId = ${query.run_id}`;
    const badge = el('span', `jp-SparkSessions-badge jp-mod-${state}`, state);
    badge.dataset.testid = 'spark-cell-query-state';
    top.append(el('span', 'jp-SparkCell-state', `session ${query.session}`));
    top.append(name, badge);
    for (const figure of queryFigures(query)) {
      if (figure.key === 'started-by') {
        continue; // this cell
      }
      const part = el('span', 'jp-SparkCell-tasks', figure.text);
      part.dataset.figure = figure.key;
      part.title = figure.title;
      top.append(part);
    }
    top.append(this._stopButton(label, state));
    const rows: HTMLElement[] = [top];
    const chart = renderSparkline(query);
    if (chart) {
      rows.push(chart);
    }
    const error = this._error || query.error;
    if (error) {
      const line = el('div', 'jp-SparkCell-error', error);
      line.dataset.testid = 'spark-cell-query-error';
      rows.push(line);
    }
    this.node.replaceChildren(...rows);
  }

  private _stopButton(label: string, state: QueryState): HTMLButtonElement {
    const stopping = state === 'stopping';
    const button = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-warn jp-SparkCell-cancel',
      stopping ? 'Stopping\u2026' : 'Stop'
    );
    button.dataset.testid = 'spark-cell-stop-query';
    button.title = stopping
      ? `Spark has not reported the end of ${label} yet`
      : `Stop the streaming query ${label}`;
    button.disabled = state !== 'active';
    button.addEventListener('click', () => void this._stop());
    return button;
  }

  private async _stop(): Promise<void> {
    const query = this._data?.query;
    const kernel = this._kernelOf();
    if (!query) {
      return;
    }
    this._error = '';
    if (!kernel) {
      this._error = 'This notebook has no kernel to ask.';
      this._draw();
      return;
    }
    this._stopping = true;
    this._draw();
    try {
      const reply = await sendControlRequest(
        kernel,
        stopQueryRequest(query.run_id, nextRequestId(), 'cell'),
        CANCEL_TIMEOUT_MS
      );
      if (reply.status === 'error') {
        throw new Error(replyErrorMessage(reply));
      }
    } catch (error) {
      this._stopping = false;
      this._error = `Stop failed: ${errorMessage(error)}`;
    }
    this._draw();
  }
}

/** Before the HTML and text renderings of the same output. */
const RANK = 10;

/** The factory of one notebook's query views. */
export function cellQueryFactory(
  panel: NotebookPanel
): IRenderMime.IRendererFactory {
  return {
    safe: true, // shows text only; its one action is a Stop the user clicks
    mimeTypes: [CELL_QUERY_MIME],
    defaultRank: RANK,
    createRenderer: () =>
      new CellQueryRenderer(() => panel.sessionContext.session?.kernel ?? null)
  };
}

/** Give every notebook, now and later, the query view's renderer. */
export function addCellQueryRenderers(tracker: INotebookTracker): void {
  const add = (panel: NotebookPanel) => {
    panel.content.rendermime.addFactory(cellQueryFactory(panel), RANK);
  };
  tracker.forEach(add);
  tracker.widgetAdded.connect((_, panel) => add(panel));
}

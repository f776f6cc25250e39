/**
 * A session's streaming queries in the sidebar, under its line: per query its
 * name and state with a Stop button, its figures (batch, rates, last batch's
 * duration, who started it), a sparkline of its rates while it runs, and the
 * error of a failed one. Ended queries are dimmed, the newest few only.
 */
import { el } from './dom';
import type { Query, QueryState, Session } from './protocol';
import {
  formatRate,
  isQueryEnded,
  queryFigures,
  queryLabel,
  rateHistory,
  sparkline
} from './queries';
import { IViewContext } from './viewContext';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** The sparkline's size in px: it fits beside its legend in a 250 px sidebar. */
export const SPARKLINE_WIDTH = 120;
export const SPARKLINE_HEIGHT = 24;

/** The session's queries, or null when it has none to list. */
export function renderQueries(
  session: Session,
  context: IViewContext
): HTMLElement | null {
  const { shown, hiddenEnded } = context.model.queriesOf(session.name);
  if (shown.length === 0) {
    return null;
  }
  const list = el('div', 'jp-SparkSessions-queries');
  list.dataset.testid = 'jss-queries';
  list.dataset.session = session.name;
  for (const query of shown) {
    list.appendChild(renderQuery(query, context));
  }
  if (hiddenEnded > 0) {
    list.appendChild(
      el(
        'div',
        'jp-SparkSessions-note',
        `${hiddenEnded} earlier ended quer${hiddenEnded === 1 ? 'y' : 'ies'} not shown.`
      )
    );
  }
  return list;
}

/** One query: its top line, its figures, its sparkline, its error. */
export function renderQuery(query: Query, context: IViewContext): HTMLElement {
  const state = context.model.queryState(query);
  const ended = isQueryEnded(state);
  const label = queryLabel(query);
  const row = el('div', 'jp-SparkSessions-query');
  row.classList.toggle('jp-mod-ended', ended);
  row.dataset.testid = 'jss-query';
  row.dataset.query = label;
  row.dataset.state = state;
  row.dataset.runId = query.run_id;

  // The name and state, then Stop at the right (under them when all do not
  // fit): as a group's line.
  const top = el('div', 'jp-SparkSessions-queryTop');
  const name = el('span', 'jp-SparkSessions-queryName', label);
  name.title =
    (query.name ? `${query.name}\n` : 'Unnamed streaming query\n') +
    `id = ${query.id}\nrunId = ${query.run_id}`;
  top.appendChild(name);
  const badge = el('span', `jp-SparkSessions-badge jp-mod-${state}`, state);
  badge.dataset.testid = 'jss-query-state';
  top.appendChild(badge);
  if (!ended) {
    const actions = el('span', 'jp-SparkSessions-groupActions');
    actions.appendChild(renderStop(query, state, label, context));
    top.appendChild(actions);
  }
  row.appendChild(top);

  const details = el('div', 'jp-SparkSessions-queryDetails');
  details.dataset.testid = 'jss-query-details';
  for (const figure of queryFigures(query)) {
    const part = el('span', 'jp-SparkSessions-queryFigure', figure.text);
    part.dataset.figure = figure.key;
    part.title = figure.title;
    details.appendChild(part);
  }
  row.appendChild(details);

  if (!ended) {
    const chart = renderSparkline(query);
    if (chart) {
      row.appendChild(chart);
    }
  }

  if (query.error) {
    const error = el('div', 'jp-SparkSessions-error', query.error);
    error.dataset.testid = 'jss-query-error';
    error.title = query.error;
    row.appendChild(error);
  }
  return row;
}

/** Stop: sends the request and returns; "Stopping…" (disabled) until it ended. */
function renderStop(
  query: Query,
  state: QueryState,
  label: string,
  context: IViewContext
): HTMLButtonElement {
  const stopping = state === 'stopping';
  const button = el(
    'button',
    'jp-SparkSessions-button',
    stopping ? 'Stopping\u2026' : 'Stop'
  );
  button.dataset.testid = 'jss-stop-query';
  button.dataset.runId = query.run_id;
  button.dataset.query = label;
  button.title = stopping
    ? `Spark has not reported the end of ${label} yet`
    : `Stop the streaming query ${label}`;
  button.disabled = state !== 'active' || !context.connected;
  button.addEventListener('click', () => context.stopQuery(query.run_id));
  return button;
}

/**
 * The input and processing rates of its recent batches as two lines, with
 * a legend naming them and the chart's top; null before two batches.
 */
export function renderSparkline(query: Query): HTMLElement | null {
  const points = rateHistory(query.history);
  const lines = sparkline(points, SPARKLINE_WIDTH, SPARKLINE_HEIGHT);
  if (lines === null) {
    return null;
  }
  const box = el('div', 'jp-SparkSessions-queryChart');
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('class', 'jp-SparkSessions-sparkline');
  svg.setAttribute('width', String(SPARKLINE_WIDTH));
  svg.setAttribute('height', String(SPARKLINE_HEIGHT));
  svg.setAttribute('viewBox', `0 0 ${SPARKLINE_WIDTH} ${SPARKLINE_HEIGHT}`);
  svg.setAttribute('role', 'img');
  const caption =
    `Input and processing rates of its last ${points.length} batches ` +
    `(top: ${formatRate(lines.max)})`;
  svg.setAttribute('aria-label', caption);
  svg.dataset.testid = 'jss-query-sparkline';
  const title = document.createElementNS(SVG_NS, 'title');
  title.textContent = caption;
  svg.appendChild(title);
  for (const [kind, attr] of [
    ['input', lines.input],
    ['process', lines.process]
  ] as const) {
    const line = document.createElementNS(SVG_NS, 'polyline');
    line.setAttribute('class', `jp-SparkSessions-sparkline-${kind}`);
    line.setAttribute('points', attr);
    line.dataset.rate = kind;
    svg.appendChild(line);
  }
  box.appendChild(svg);
  const legend = el('span', 'jp-SparkSessions-queryLegend');
  legend.appendChild(el('span', 'jp-SparkSessions-legend-input', 'in'));
  legend.appendChild(
    el('span', 'jp-SparkSessions-legend-process', 'processed')
  );
  legend.appendChild(
    el('span', 'jp-SparkSessions-legend-max', `top ${formatRate(lines.max)}`)
  );
  box.appendChild(legend);
  return box;
}

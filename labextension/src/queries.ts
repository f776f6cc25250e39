/**
 * What the views show of a session's streaming queries: which of them, their
 * figures as short texts, and their rate history as the points of a sparkline
 * (queryView.ts draws it).
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */
import { formatDuration } from './format';
import type { Query, QueryState } from './protocol';

/**
 * Ended queries a session lists (the newest): the board keeps 20 of all
 * sessions', more than a sidebar row wants.
 */
export const ENDED_QUERIES_SHOWN = 3;

/** Whether a query's state is final (Spark reported its end). */
export function isQueryEnded(state: QueryState): boolean {
  return state === 'stopped' || state === 'failed';
}

/** What a query is called: its name, or its id when unnamed. */
export function queryLabel(query: Query): string {
  return query.name || query.id;
}

/** A session's queries as listed, and how many ended ones are not. */
export interface IListedQueries {
  /** Those not ended, newest first, then the newest ended ones. */
  shown: Query[];
  /** Ended queries beyond ENDED_QUERIES_SHOWN. */
  hiddenEnded: number;
}

/**
 * The queries of `session` a view lists: every one that has not ended, then
 * the ENDED_QUERIES_SHOWN that ended last. `stateOf` gives the state shown
 * (the sidebar's, which knows a Stop was clicked).
 */
export function listedQueries(
  queries: ReadonlyArray<Query>,
  session: string,
  stateOf: (query: Query) => QueryState = q => q.state
): IListedQueries {
  const own = queries.filter(q => q.session === session);
  const newest = (a: Query, b: Query, at: (q: Query) => number | null) =>
    (at(b) ?? -Infinity) - (at(a) ?? -Infinity);
  const live = own
    .filter(q => !isQueryEnded(stateOf(q)))
    .sort((a, b) => newest(a, b, q => q.started_at));
  const ended = own
    .filter(q => isQueryEnded(stateOf(q)))
    .sort((a, b) => newest(a, b, q => q.ended_at ?? q.started_at));
  return {
    shown: [...live, ...ended.slice(0, ENDED_QUERIES_SHOWN)],
    hiddenEnded: Math.max(0, ended.length - ENDED_QUERIES_SHOWN)
  };
}

/** "1 streaming query", "3 streaming queries". */
export function streamingQueriesText(count: number): string {
  return `${count} streaming quer${count === 1 ? 'y' : 'ies'}`;
}

const COMPACT = new Intl.NumberFormat('en-US', {
  notation: 'compact',
  maximumSignificantDigits: 3
});

/**
 * "4.9", "512", "12.3K", "1.5M": a rate in few characters (one decimal below
 * 100, three significant digits above); an en dash when unknown.
 */
export function formatCompact(value: number | null): string {
  if (value === null || !Number.isFinite(value)) {
    return '\u2013';
  }
  const positive = Math.max(0, value);
  if (positive < 100) {
    return String(Math.round(positive * 10) / 10);
  }
  return COMPACT.format(positive);
}

/** "4.9 rows/s"; an en dash when unknown (no batch yet). */
export function formatRate(rate: number | null): string {
  return rate === null ? '\u2013' : `${formatCompact(rate)} rows/s`;
}

/** "120 ms", "2.5 s", "1m 05s"; an en dash when unknown. */
export function formatBatchDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) {
    return '\u2013';
  }
  if (ms < 1000) {
    return `${Math.round(Math.max(0, ms))} ms`;
  }
  if (ms < 60000) {
    return `${Math.round(ms / 100) / 10} s`;
  }
  return formatDuration(ms / 1000);
}

/** "etl:5" when a cell started it, else "a thread". */
export function startedByText(query: Query): string {
  return `started by ${query.started_by || 'a thread'}`;
}

/** One figure of a query's details line: its text and what it means. */
export interface IQueryFigure {
  /** A short name for tests and styles ("batch", "input", ...). */
  key: string;
  text: string;
  title: string;
}

/**
 * The figures of a query's details line: its last batch, its input rate (over
 * the last 30 s), its processing rate, the last batch's duration, and who started it.
 */
export function queryFigures(query: Query): IQueryFigure[] {
  return [
    {
      key: 'batch',
      text:
        query.batch_id === null ? 'no batch yet' : `batch ${query.batch_id}`,
      title: query.message
        ? `Its last completed micro-batch\n${query.message}`
        : 'Its last completed micro-batch'
    },
    {
      key: 'input',
      text: `in ${formatRate(query.input_rate)}`,
      title: `Rows a second arriving, over its batches of the last 30 s (its last batch: ${query.input_rows} rows)`
    },
    {
      key: 'process',
      text: `processed ${formatRate(query.process_rate)}`,
      title: 'Rows a second processed, in its last batch'
    },
    {
      key: 'duration',
      text: `last batch ${formatBatchDuration(query.batch_duration_ms)}`,
      title: 'How long its last batch took'
    },
    {
      key: 'started-by',
      text: startedByText(query),
      title: query.started_by
        ? `The cell ${query.started_by} started it`
        : 'A thread (not a cell) started it'
    }
  ];
}

/** One point of a query's rate history. */
export interface IRatePoint {
  /** Epoch seconds. */
  time: number;
  input: number;
  process: number;
}

/** The well-formed (time, input rate, process rate) points of a history. */
export function rateHistory(history: ReadonlyArray<unknown>): IRatePoint[] {
  const points: IRatePoint[] = [];
  for (const entry of history) {
    if (
      Array.isArray(entry) &&
      entry.length >= 3 &&
      entry.slice(0, 3).every(v => typeof v === 'number' && Number.isFinite(v))
    ) {
      const [time, input, process] = entry as number[];
      points.push({ time, input, process });
    }
  }
  return points;
}

/** The two polylines of a sparkline, as SVG `points` attributes. */
export interface ISparkline {
  input: string;
  process: string;
  /** The highest rate, the top of the chart. */
  max: number;
}

/**
 * The input and processing rates of `points` as polylines in a `width` x
 * `height` box: time across (or the batch's index, when all share one time),
 * rate up from 0 to the highest of both. Null with fewer than 2 points.
 */
export function sparkline(
  points: ReadonlyArray<IRatePoint>,
  width: number,
  height: number
): ISparkline | null {
  if (points.length < 2) {
    return null;
  }
  const inset = 1; // half a stroke: a line at 0 or at the top is drawn whole
  const first = points[0].time;
  const span = points[points.length - 1].time - first;
  const max = Math.max(0, ...points.map(p => Math.max(p.input, p.process)));
  const x = (p: IRatePoint, i: number) =>
    inset +
    (span > 0 ? (p.time - first) / span : i / (points.length - 1)) *
      (width - 2 * inset);
  const y = (rate: number) =>
    height -
    inset -
    (max > 0 ? Math.max(0, rate) / max : 0) * (height - 2 * inset);
  const line = (rate: (p: IRatePoint) => number) =>
    points
      .map((p, i) => `${x(p, i).toFixed(1)},${y(rate(p)).toFixed(1)}`)
      .join(' ');
  return { input: line(p => p.input), process: line(p => p.process), max };
}

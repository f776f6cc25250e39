// @vitest-environment happy-dom
import { describe, expect, it, vi } from 'vitest';

import { SidebarModel } from '../src/model';
import type { Board } from '../src/protocol';
import { SPARKLINE_HEIGHT, SPARKLINE_WIDTH } from '../src/queryView';
import { renderSession } from '../src/sessionView';
import { IViewContext } from '../src/viewContext';
import { board, group, query, session } from './fixtures';

/** A render context on a model showing `initial`. */
function context(initial: Board, connected = true) {
  const model = new SidebarModel();
  model.reset('Python 3');
  model.applyBoard(initial);
  const ctx: IViewContext = {
    model,
    now: 1010,
    baseUrl: '/base/',
    connected,
    cancel: vi.fn(),
    stopQuery: vi.fn(),
    everySecond: () => undefined,
    isExpanded: () => false,
    toggleExpanded: vi.fn()
  };
  return ctx;
}

function q(root: Element, testid: string): HTMLElement[] {
  return Array.from(root.querySelectorAll(`[data-testid="${testid}"]`));
}

function rowOf(root: Element, name: string): HTMLElement {
  const row = q(root, 'jss-query').find(r => r.dataset.query === name);
  expect(row, `no query row ${name}`).toBeDefined();
  return row!;
}

const active = query();
const stopping = query({
  id: 'q-stopping',
  run_id: 'run-stopping',
  name: '',
  state: 'stopping',
  stop_source: 'magic',
  started_by: '',
  batch_id: 12,
  input_rate: 1234.5,
  process_rate: 2000,
  batch_duration_ms: 2500,
  started_at: 980
});
const failed = query({
  id: 'q-failed',
  run_id: 'run-failed',
  name: 'sums',
  state: 'failed',
  error: 'ValueError: bad row in foreachBatch',
  started_by: 'etl:7',
  started_at: 970,
  ended_at: 1005,
  batch_id: 3
});
const threeQueries = board({
  sessions: [session({ active_queries: 2 })],
  groups: [],
  queries: [failed, stopping, active]
});

describe("a session's streaming queries", () => {
  it('lists an active, a stopping and a failed query with their figures', () => {
    const ctx = context(threeQueries);
    const block = renderSession(threeQueries.sessions[0], ctx);
    const rows = q(block, 'jss-query');
    // the live ones newest first, then the ended one
    expect(rows.map(r => [r.dataset.query, r.dataset.state])).toEqual([
      ['rates', 'active'],
      ['q-stopping', 'stopping'],
      ['sums', 'failed']
    ]);
    expect(rows.map(r => r.dataset.runId)).toEqual([
      active.run_id,
      'run-stopping',
      'run-failed'
    ]);

    const figures = (row: HTMLElement) =>
      q(row, 'jss-query-details')[0].textContent;
    const rates = rowOf(block, 'rates');
    expect(q(rates, 'jss-query-state')[0].textContent).toBe('active');
    expect(figures(rates)).toBe(
      'batch 81in 5 rows/sprocessed 4.9 rows/slast batch 120 msstarted by etl:5'
    );
    const details = Array.from(
      q(rates, 'jss-query-details')[0].children
    ) as HTMLElement[];
    expect(details.map(d => d.dataset.figure)).toEqual([
      'batch',
      'input',
      'process',
      'duration',
      'started-by'
    ]);
    const unnamed = rowOf(block, 'q-stopping');
    expect(figures(unnamed)).toBe(
      'batch 12in 1.23K rows/sprocessed 2K rows/slast batch 2.5 sstarted by a thread'
    );

    // the failed one: dimmed, its error on a line of its own, no Stop
    const sums = rowOf(block, 'sums');
    expect(sums.classList.contains('jp-mod-ended')).toBe(true);
    expect(rates.classList.contains('jp-mod-ended')).toBe(false);
    const [error] = q(sums, 'jss-query-error');
    expect(error.textContent).toBe('ValueError: bad row in foreachBatch');
    expect(error.classList.contains('jp-SparkSessions-error')).toBe(true);
    expect(error.parentElement).toBe(sums);
    expect(q(sums, 'jss-stop-query')).toHaveLength(0);
    expect(q(rates, 'jss-query-error')).toHaveLength(0);

    // the queries stand for their micro-batch jobs: no "No jobs yet."
    expect(block.textContent).not.toContain('No jobs yet.');
  });

  it("draws an active query's input and processing rates, not an ended one's", () => {
    const ctx = context(threeQueries);
    const block = renderSession(threeQueries.sessions[0], ctx);
    const [chart] = q(rowOf(block, 'rates'), 'jss-query-sparkline');
    expect(chart.getAttribute('width')).toBe(String(SPARKLINE_WIDTH));
    expect(chart.getAttribute('height')).toBe(String(SPARKLINE_HEIGHT));
    const lines = Array.from(chart.querySelectorAll('polyline'));
    expect(lines.map(l => l.getAttribute('class'))).toEqual([
      'jp-SparkSessions-sparkline-input',
      'jp-SparkSessions-sparkline-process'
    ]);
    // history: (1000, 5, 4), (1001, 5, 6), (1002, 4, 4.93); the top is 6
    expect(lines[0].getAttribute('points')).toBe('1.0,4.7 60.0,4.7 119.0,8.3');
    expect(lines[1].getAttribute('points')).toBe('1.0,8.3 60.0,1.0 119.0,4.9');
    expect(chart.parentElement?.textContent).toContain('top 6 rows/s');
    expect(q(rowOf(block, 'sums'), 'jss-query-sparkline')).toHaveLength(0);
  });

  it('stops an active query by its run id, once, through the context', () => {
    const ctx = context(threeQueries);
    const block = renderSession(threeQueries.sessions[0], ctx);
    const [stop] = q(rowOf(block, 'rates'), 'jss-stop-query') as [
      HTMLButtonElement
    ];
    expect(stop.textContent).toBe('Stop');
    expect(stop.disabled).toBe(false);
    expect(stop.dataset.runId).toBe(active.run_id);
    expect(stop.dataset.query).toBe('rates');
    stop.click();
    expect(ctx.stopQuery).toHaveBeenCalledTimes(1);
    expect(ctx.stopQuery).toHaveBeenCalledWith(active.run_id);
    expect(ctx.cancel).not.toHaveBeenCalled();
  });

  it('disables Stop while the query is stopping, and without a connection', () => {
    const block = renderSession(
      threeQueries.sessions[0],
      context(threeQueries)
    );
    const [stopping] = q(
      rowOf(block, 'q-stopping'),
      'jss-stop-query'
    ) as HTMLButtonElement[];
    expect(stopping.disabled).toBe(true);
    expect(stopping.textContent).toBe('Stopping\u2026');

    const offline = renderSession(
      threeQueries.sessions[0],
      context(threeQueries, false)
    );
    const [stop] = q(
      rowOf(offline, 'rates'),
      'jss-stop-query'
    ) as HTMLButtonElement[];
    expect(stop.disabled).toBe(true);
  });

  it('shows a clicked Stop as stopping until the board says so', () => {
    const ctx = context(threeQueries);
    ctx.model.markStopping(active.run_id);
    const block = renderSession(threeQueries.sessions[0], ctx);
    const rates = rowOf(block, 'rates');
    expect(rates.dataset.state).toBe('stopping');
    const [stop] = q(rates, 'jss-stop-query') as HTMLButtonElement[];
    expect(stop.disabled).toBe(true);
    expect(stop.textContent).toBe('Stopping\u2026');
  });

  it('lists the newest ended queries only, and says how many it leaves out', () => {
    const ended = Array.from({ length: 5 }, (_, i) =>
      query({
        id: `q${i}`,
        run_id: `r${i}`,
        name: `old${i}`,
        state: 'stopped',
        started_at: 900 + i,
        ended_at: 950 + i
      })
    );
    const shown = board({ groups: [], queries: ended });
    const block = renderSession(shown.sessions[0], context(shown));
    expect(q(block, 'jss-query').map(r => r.dataset.query)).toEqual([
      'old4',
      'old3',
      'old2'
    ]);
    expect(block.textContent).toContain('2 earlier ended queries not shown.');
  });
});

describe("the session's line with streaming queries", () => {
  it('counts them, and lets Cancel all stop them with no group running', () => {
    const ctx = context(threeQueries);
    const block = renderSession(threeQueries.sessions[0], ctx);
    const [count] = q(block, 'jss-session-queries');
    expect(count.textContent).toBe('2 streaming queries');
    expect(q(block, 'jss-session')[0].contains(count)).toBe(true);
    const [cancelAll] = q(block, 'jss-cancel-session') as HTMLButtonElement[];
    expect(cancelAll.disabled).toBe(false);
    expect(cancelAll.title).toBe(
      'Cancel every running job group of etl and stop its 2 streaming queries'
    );
    cancelAll.click();
    expect(ctx.cancel).toHaveBeenCalledWith({ session: 'etl' });
  });

  it('says "1 streaming query"; nothing, and Cancel all off, without any', () => {
    const one = board({
      sessions: [session({ active_queries: 1 })],
      groups: [],
      queries: [active]
    });
    let block = renderSession(one.sessions[0], context(one));
    expect(q(block, 'jss-session-queries')[0].textContent).toBe(
      '1 streaming query'
    );

    const none = board({ groups: [group({ state: 'succeeded' })] });
    block = renderSession(none.sessions[0], context(none));
    expect(q(block, 'jss-session-queries')).toHaveLength(0);
    expect(q(block, 'jss-query')).toHaveLength(0);
    expect(q(block, 'jss-queries')).toHaveLength(0);
    const [cancelAll] = q(block, 'jss-cancel-session') as HTMLButtonElement[];
    expect(cancelAll.disabled).toBe(true);
    expect(cancelAll.title).toBe('Cancel every running job group of etl');
  });
});

import { describe, expect, it } from 'vitest';

import {
  ENDED_QUERIES_SHOWN,
  formatBatchDuration,
  formatCompact,
  formatRate,
  listedQueries,
  queryFigures,
  queryLabel,
  rateHistory,
  sparkline,
  streamingQueriesText
} from '../src/queries';
import { query } from './fixtures';

describe('query texts', () => {
  it('formats rates compactly and durations in ms, s, then minutes', () => {
    expect(
      [0, 4.93, 5, 99.96, 512.4, 999.6, 12345, 1.5e6].map(formatCompact)
    ).toEqual(['0', '4.9', '5', '100', '512', '1K', '12.3K', '1.5M']);
    expect(formatCompact(null)).toBe('\u2013');
    expect(formatRate(4.93)).toBe('4.9 rows/s');
    expect(formatRate(null)).toBe('\u2013');
    expect([120, 999.4, 2500, 65000].map(formatBatchDuration)).toEqual([
      '120 ms',
      '999 ms',
      '2.5 s',
      '1m 05s'
    ]);
    expect(formatBatchDuration(null)).toBe('\u2013');
  });

  it("names a query by its name, or its id; counts a session's queries", () => {
    expect(queryLabel(query())).toBe('rates');
    expect(queryLabel(query({ name: '' }))).toBe(query().id);
    expect(streamingQueriesText(1)).toBe('1 streaming query');
    expect(streamingQueriesText(3)).toBe('3 streaming queries');
  });

  it('gives the figures of the details line, a thread when no cell started it', () => {
    expect(queryFigures(query()).map(f => f.text)).toEqual([
      'batch 81',
      'in 5 rows/s',
      'processed 4.9 rows/s',
      'last batch 120 ms',
      'started by etl:5'
    ]);
    const fresh = query({
      started_by: '',
      batch_id: null,
      input_rate: null,
      process_rate: null,
      batch_duration_ms: null
    });
    expect(queryFigures(fresh).map(f => f.text)).toEqual([
      'no batch yet',
      'in \u2013',
      'processed \u2013',
      'last batch \u2013',
      'started by a thread'
    ]);
  });
});

describe('which queries a session lists', () => {
  const ended = (i: number, state: 'stopped' | 'failed' = 'stopped') =>
    query({
      id: `q${i}`,
      run_id: `r${i}`,
      state,
      started_at: 900 + i,
      ended_at: 950 + i
    });

  it('lists the live ones newest first, then the newest ended ones only', () => {
    const old = query({ id: 'old', run_id: 'old', started_at: 800 });
    const young = query({ id: 'young', run_id: 'young', started_at: 990 });
    const theirs = query({ id: 'b', run_id: 'b', session: 'b' });
    const all = [ended(1), old, ended(2), ended(3, 'failed'), young, ended(4)];
    const { shown, hiddenEnded } = listedQueries([...all, theirs], 'etl');
    expect(shown.map(q => q.id)).toEqual(['young', 'old', 'q4', 'q3', 'q2']);
    expect(ENDED_QUERIES_SHOWN).toBe(3);
    expect(hiddenEnded).toBe(1);
  });

  it('orders by the state shown (a stop clicked is not an end)', () => {
    const q = query();
    const listed = listedQueries([q], 'etl', () => 'stopping');
    expect(listed.shown).toEqual([q]);
  });
});

describe('the rate sparkline', () => {
  it('keeps only well-formed points of the history', () => {
    expect(
      rateHistory([[1, 2, 3], [1, 'x', 3], [4, 5], null, [7, 8, 9]])
    ).toEqual([
      { time: 1, input: 2, process: 3 },
      { time: 7, input: 8, process: 9 }
    ]);
  });

  it('spans time across and 0 to the highest rate up, inside the box', () => {
    const points = rateHistory([
      [1000, 10, 0],
      [1001, 5, 5],
      [1003, 0, 10]
    ]);
    const lines = sparkline(points, 120, 24)!;
    expect(lines.max).toBe(10);
    expect(lines.input).toBe('1.0,1.0 40.3,12.0 119.0,23.0');
    expect(lines.process).toBe('1.0,23.0 40.3,12.0 119.0,1.0');
  });

  it('needs two points; spreads points of one time evenly, flat at 0 rates', () => {
    expect(sparkline(rateHistory([[1000, 1, 1]]), 120, 24)).toBeNull();
    const lines = sparkline(
      rateHistory([
        [5, 0, 0],
        [5, 0, 0],
        [5, 0, 0]
      ]),
      120,
      24
    )!;
    expect(lines.input).toBe('1.0,23.0 60.0,23.0 119.0,23.0');
  });
});

import { describe, expect, it } from 'vitest';

import {
  codeSpans,
  elapsedSeconds,
  formatDuration,
  progress
} from '../src/format';
import { group, job, tasks } from './fixtures';

describe('maths and formatting', () => {
  it('progress is (completed + skipped) / total', () => {
    expect(progress(group())).toBeCloseTo(6 / 8);
    expect(
      progress(job({ tasks: tasks({ total: 4, completed: 1, skipped: 1 }) }))
    ).toBe(0.5);
    expect(progress(job({ tasks: tasks({ total: 0 }) }))).toBe(0);
    expect(progress(job({ tasks: tasks({ total: 2, completed: 5 }) }))).toBe(1);
  });

  it('elapsed time runs to now while running, to completion when done', () => {
    expect(elapsedSeconds(group({ submitted_at: 1000 }), 1042.5)).toBe(42.5);
    expect(
      elapsedSeconds(
        group({ state: 'succeeded', submitted_at: 1000, completed_at: 1010 }),
        5000
      )
    ).toBe(10);
    expect(elapsedSeconds(group({ submitted_at: null }), 5000)).toBeNull();
    // a final group without completed_at uses its jobs' completion times
    expect(
      elapsedSeconds(
        group({
          state: 'cancelled',
          completed_at: null,
          jobs: [
            job({ completed_at: 1003 }),
            job({ id: 2, completed_at: 1007 })
          ]
        }),
        5000
      )
    ).toBe(7);
    // clock skew never makes it negative
    expect(elapsedSeconds(group({ submitted_at: 1000 }), 990)).toBe(0);
  });

  it('formats durations', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(42.9)).toBe('42s');
    expect(formatDuration(185)).toBe('3m 05s');
    expect(formatDuration(7260)).toBe('2h 01m');
    expect(formatDuration(null)).toBe('\u2013');
  });
});

describe('codeSpans', () => {
  it('splits a message into text and its backticked code', () => {
    expect(codeSpans('run `%load_ext x`, then `y`.')).toEqual([
      { text: 'run ', code: false },
      { text: '%load_ext x', code: true },
      { text: ', then ', code: false },
      { text: 'y', code: true },
      { text: '.', code: false }
    ]);
  });

  it('leaves text without a pair of backticks as it is', () => {
    expect(codeSpans('plain')).toEqual([{ text: 'plain', code: false }]);
    expect(codeSpans('a ` b')).toEqual([{ text: 'a ` b', code: false }]);
    expect(codeSpans('')).toEqual([]);
  });
});

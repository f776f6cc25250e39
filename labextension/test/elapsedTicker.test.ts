// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { ElapsedTicker, IDLE_TICK_MS } from '../src/elapsedTicker';

let ticker: ElapsedTicker;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  vi.setSystemTime(1_000_000);
  ticker = new ElapsedTicker();
});

afterEach(() => {
  ticker.stop();
  vi.useRealTimers();
});

describe('ElapsedTicker', () => {
  it('redraws its parts each second, with the time, while a group runs', () => {
    const seen: number[] = [];
    ticker.add(now => seen.push(now));
    ticker.run('running');
    ticker.run('running'); // still one timer
    vi.advanceTimersByTime(2000);
    expect(seen).toEqual([1001, 1002]);
    ticker.run('off');
    vi.advanceTimersByTime(2000);
    expect(seen).toHaveLength(2);
  });

  it('moves on every few seconds while nothing runs, and not without parts', () => {
    const seen: number[] = [];
    ticker.run('idle'); // nothing to redraw: no timer
    ticker.add(now => seen.push(now));
    vi.advanceTimersByTime(IDLE_TICK_MS);
    expect(seen).toEqual([]);
    ticker.run('idle');
    vi.advanceTimersByTime(2 * IDLE_TICK_MS);
    expect(seen).toEqual([1010, 1015]);
    ticker.run('running'); // a group started: each second again
    vi.advanceTimersByTime(1000);
    expect(seen).toEqual([1010, 1015, 1016]);
    ticker.tick(); // the sidebar shown again: at once
    expect(seen).toHaveLength(4);
  });

  it('forgets the parts of the previous render on clear', () => {
    const old = vi.fn();
    const current = vi.fn();
    ticker.add(old);
    ticker.clear();
    ticker.add(current);
    ticker.run('running');
    vi.advanceTimersByTime(1000);
    expect(old).not.toHaveBeenCalled();
    expect(current).toHaveBeenCalledTimes(1);
  });
});

// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { ElapsedTicker } from '../src/elapsedTicker';

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
  it('redraws its parts each second, with the time, while active', () => {
    const seen: number[] = [];
    ticker.add(now => seen.push(now));
    ticker.run(true);
    ticker.run(true); // still one timer
    vi.advanceTimersByTime(2000);
    expect(seen).toEqual([1001, 1002]);
    ticker.run(false);
    vi.advanceTimersByTime(2000);
    expect(seen).toHaveLength(2);
  });

  it('forgets the parts of the previous render on clear', () => {
    const old = vi.fn();
    const current = vi.fn();
    ticker.add(old);
    ticker.clear();
    ticker.add(current);
    ticker.run(true);
    vi.advanceTimersByTime(1000);
    expect(old).not.toHaveBeenCalled();
    expect(current).toHaveBeenCalledTimes(1);
  });
});

import { describe, expect, it } from 'vitest';

import { timelineOf } from '../src/timeline';
import { group } from './fixtures';

const OPTIONS = {
  width: 100,
  minBarWidth: 2,
  gap: 1,
  maxGroups: 10,
  minSpanSeconds: 0
};

function done(id: string, start: number, end: number) {
  return group({
    id,
    execution_count: Number(id.split(':')[1]),
    state: 'succeeded',
    submitted_at: start,
    completed_at: end
  });
}

describe('timelineOf', () => {
  it('places finished groups on one axis from the first start to the last end', () => {
    const t = timelineOf(
      [done('a:2', 1010, 1020), done('a:1', 1000, 1005)],
      2000,
      OPTIONS
    )!;
    expect(t.start).toBe(1000);
    expect(t.end).toBe(1020);
    expect(t.live).toBe(false);
    // oldest first, proportional: 20 s over 100 units
    expect(t.bars.map(b => [b.group.id, b.x, b.width, b.lane])).toEqual([
      ['a:1', 0, 25, 0],
      ['a:2', 50, 50, 0]
    ]);
    expect(t.lanes).toBe(1);
  });

  it('runs a running group to now, and the axis with it', () => {
    const running = group({
      id: 'a:3',
      execution_count: 3,
      submitted_at: 1010
    });
    const t = timelineOf([done('a:1', 1000, 1005), running], 1020, OPTIONS)!;
    expect(t.live).toBe(true);
    expect(t.end).toBe(1020);
    const bar = t.bars.find(b => b.group.id === 'a:3')!;
    expect([bar.x, bar.width]).toEqual([50, 50]);
  });

  it('puts groups that overlap on separate lanes, and reuses a lane once free', () => {
    const t = timelineOf(
      [
        done('a:1', 1000, 1060),
        done('a:2', 1010, 1030),
        done('a:3', 1070, 1100)
      ],
      1100,
      OPTIONS
    )!;
    expect(t.bars.map(b => [b.group.id, b.lane])).toEqual([
      ['a:1', 0],
      ['a:2', 1],
      ['a:3', 0]
    ]);
    expect(t.lanes).toBe(2);
  });

  it('keeps an instant group visible and every bar inside the axis', () => {
    const t = timelineOf(
      [
        done('a:1', 1000, 1000),
        done('a:2', 1000, 1100),
        done('a:3', 1100, 1100)
      ],
      1200,
      OPTIONS
    )!;
    for (const bar of t.bars) {
      expect(bar.width).toBeGreaterThanOrEqual(2);
      expect(bar.x).toBeGreaterThanOrEqual(0);
      expect(bar.x + bar.width).toBeLessThanOrEqual(100);
    }
    expect(t.bars.find(b => b.group.id === 'a:3')!.x).toBe(98);
  });

  it('reaches back at least the shortest span, so a new group is a short bar', () => {
    const running = group({
      id: 'a:1',
      execution_count: 1,
      submitted_at: 1054
    });
    const t = timelineOf([running], 1060, { ...OPTIONS, minSpanSeconds: 60 })!;
    expect([t.start, t.end]).toEqual([1000, 1060]);
    expect([t.bars[0].x, t.bars[0].width]).toEqual([90, 10]);
  });

  it('shows the most recent groups only, and nothing before any started', () => {
    const many = Array.from({ length: 15 }, (_, i) =>
      done(`a:${i + 1}`, 1000 + 10 * i, 1005 + 10 * i)
    );
    const t = timelineOf(many, 2000, OPTIONS)!;
    expect(t.bars.map(b => b.group.id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `a:${i + 6}`)
    );
    expect(
      timelineOf([group({ submitted_at: null })], 2000, OPTIONS)
    ).toBeNull();
    expect(timelineOf([], 2000, OPTIONS)).toBeNull();
  });
});

/**
 * The geometry of a session's timeline: each recent job group a bar from its
 * submission to its end (or now, while it runs), on a shared time axis.
 * Groups that overlap in time go on separate lanes; the others share one, so
 * the picture stays a few pixels high.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */
import { elapsedSeconds } from './format';
import { isFinalState } from './messages';
import { newestFirst } from './model';
import type { Group } from './protocol';

/** One group's bar, in the timeline's own units (0 to `width`). */
export interface ITimelineBar {
  group: Group;
  /** Epoch seconds. */
  start: number;
  end: number;
  lane: number;
  x: number;
  width: number;
}

/** The bars and the axis they share. */
export interface ITimeline {
  bars: ITimelineBar[];
  lanes: number;
  /** Epoch seconds at x = 0 and x = width. */
  start: number;
  end: number;
  /** Whether the axis ends now (a group still runs). */
  live: boolean;
}

/** How the timeline is drawn. */
export interface ITimelineOptions {
  /** At most this many groups, the most recent. */
  maxGroups: number;
  /** Units of the axis (the SVG's viewBox width). */
  width: number;
  /** The narrowest bar, so that a group of a few milliseconds still shows. */
  minBarWidth: number;
  /** The space kept between two bars on one lane. */
  gap: number;
  /**
   * The shortest axis (seconds): a group that just started shows as a short
   * bar growing at the right, not as a full-width bar like a progress bar.
   */
  minSpanSeconds: number;
}

export const TIMELINE_DEFAULTS: ITimelineOptions = {
  maxGroups: 10,
  width: 1000,
  minBarWidth: 8,
  gap: 4,
  minSpanSeconds: 60
};

/**
 * The timeline of these groups at `now` (epoch seconds), or null when none
 * has a submission time. Bars are in submission order.
 */
export function timelineOf(
  groups: ReadonlyArray<Group>,
  now: number,
  options: Partial<ITimelineOptions> = {}
): ITimeline | null {
  const { maxGroups, width, minBarWidth, gap, minSpanSeconds } = {
    ...TIMELINE_DEFAULTS,
    ...options
  };
  const spans = newestFirst(groups)
    .filter(g => typeof g.submitted_at === 'number')
    .slice(0, maxGroups)
    .map(group => {
      const start = group.submitted_at as number;
      // A final group without end times ends where it started: a sliver.
      const end = start + (elapsedSeconds(group, now) ?? 0);
      return { group, start, end };
    })
    .reverse();
  if (spans.length === 0) {
    return null;
  }
  const live = spans.some(s => !isFinalState(s.group.state));
  const end = Math.max(live ? now : -Infinity, ...spans.map(s => s.end));
  const start = Math.min(end - minSpanSeconds, ...spans.map(s => s.start));
  const duration = Math.max(end - start, 1e-3);

  const laneRight: number[] = []; // the right edge of each lane's last bar
  const bars = spans.map(({ group, start: s, end: e }) => {
    const barWidth = Math.min(
      width,
      Math.max(minBarWidth, ((e - s) / duration) * width)
    );
    const x = Math.min(((s - start) / duration) * width, width - barWidth);
    let lane = laneRight.findIndex(right => right + gap <= x);
    if (lane === -1) {
      lane = laneRight.length;
      laneRight.push(0);
    }
    laneRight[lane] = x + barWidth;
    return { group, start: s, end: e, lane, x, width: barWidth };
  });
  return { bars, lanes: laneRight.length, start, end, live };
}

/**
 * Draws a session's timeline (timeline.ts) as an inline SVG: one bar per
 * recent job group, colored by its state (style/base.css), with an axis
 * caption saying how far back it reaches.
 */
import { formatDuration } from './format';
import type { Group, GroupState } from './protocol';
import { ITimeline, TIMELINE_DEFAULTS, timelineOf } from './timeline';

const SVG_NS = 'http://www.w3.org/2000/svg';
/**
 * Height of one lane and the space between lanes, in SVG units (= px): a bar
 * about as tall as the text beside it, to be seen and hovered (6 px was a line).
 */
export const LANE_HEIGHT = 14;
const LANE_GAP = 2;

/** A timeline as drawn, for the sidebar's clock. */
export interface IDrawnTimeline {
  /** Its axis ends now (a group runs): its bars grow, so it is drawn anew. */
  readonly live: boolean;
  /** Moves the axis caption to `now` (epoch seconds), the bars as they are. */
  setNow(now: number): void;
}

/**
 * The axis caption at `now`: how long ago the axis starts, and ends ("now"
 * while a group runs).
 */
export function axisLabels(timeline: ITimeline, now: number): [string, string] {
  return [
    `${formatDuration(now - timeline.start)} ago`,
    timeline.live ? 'now' : `${formatDuration(now - timeline.end)} ago`
  ];
}

/**
 * Appends the timeline of `groups` at `now` (epoch seconds) to `container`;
 * `stateOf` gives the state to color a group by (the sidebar's, which knows
 * a cancel was clicked). Nothing (null) when no group has started.
 */
export function renderTimeline(
  container: HTMLElement,
  groups: ReadonlyArray<Group>,
  now: number,
  stateOf: (group: Group) => GroupState
): IDrawnTimeline | null {
  const timeline = timelineOf(groups, now);
  if (timeline === null) {
    return null;
  }
  const { width } = TIMELINE_DEFAULTS;
  const height = timeline.lanes * (LANE_HEIGHT + LANE_GAP) - LANE_GAP;
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('class', 'jp-SparkSessions-timelineChart');
  // Stretched to the sidebar's width; the height stays in pixels.
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('height', String(height));
  svg.setAttribute('role', 'img');
  svg.setAttribute(
    'aria-label',
    `Timeline of the last ${timeline.bars.length} job group(s)`
  );
  for (const bar of timeline.bars) {
    const state = stateOf(bar.group);
    const rect = document.createElementNS(SVG_NS, 'rect');
    rect.setAttribute('class', `jp-SparkSessions-timelineBar jp-mod-${state}`);
    rect.setAttribute('x', bar.x.toFixed(1));
    rect.setAttribute('y', String(bar.lane * (LANE_HEIGHT + LANE_GAP)));
    rect.setAttribute('width', bar.width.toFixed(1));
    rect.setAttribute('height', String(LANE_HEIGHT));
    rect.dataset.testid = 'jss-timeline-bar';
    rect.dataset.group = bar.group.id;
    rect.dataset.state = state;
    const title = document.createElementNS(SVG_NS, 'title');
    title.textContent = `${bar.group.id} ${state}, ${formatDuration(bar.end - bar.start)}`;
    rect.appendChild(title);
    svg.appendChild(rect);
  }
  container.appendChild(svg);

  const axis = document.createElement('div');
  axis.className = 'jp-SparkSessions-timelineAxis';
  axis.dataset.testid = 'jss-timeline-axis';
  const from = document.createElement('span');
  const to = document.createElement('span');
  axis.append(from, to);
  container.appendChild(axis);
  const setNow = (at: number) => {
    [from.textContent, to.textContent] = axisLabels(timeline, at);
  };
  setNow(now);
  return { live: timeline.live, setNow };
}

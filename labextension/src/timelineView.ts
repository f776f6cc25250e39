/**
 * Draws a session's timeline (timeline.ts) as an inline SVG: one bar per
 * recent job group, colored by its state (style/base.css), with an axis
 * caption saying how far back it reaches.
 */
import { formatDuration } from './format';
import type { Group, GroupState } from './protocol';
import { TIMELINE_DEFAULTS, timelineOf } from './timeline';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Height of one lane and the space between lanes, in SVG units (= px). */
const LANE_HEIGHT = 6;
const LANE_GAP = 2;

/**
 * Appends the timeline of `groups` at `now` (epoch seconds) to `container`;
 * `stateOf` gives the state to color a group by (the sidebar's, which knows
 * a cancel was clicked). Nothing when no group has started.
 */
export function renderTimeline(
  container: HTMLElement,
  groups: ReadonlyArray<Group>,
  now: number,
  stateOf: (group: Group) => GroupState
): void {
  const timeline = timelineOf(groups, now);
  if (timeline === null) {
    return;
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
  const from = document.createElement('span');
  from.textContent = `${formatDuration(now - timeline.start)} ago`;
  const to = document.createElement('span');
  to.textContent = timeline.live
    ? 'now'
    : `${formatDuration(now - timeline.end)} ago`;
  axis.append(from, to);
  container.appendChild(axis);
}

/**
 * What happened inside a job group (the kernel's `inside`, protocol
 * GroupInside): its stages as a compact table, the stages it does not show,
 * a slot chart (the running tasks on each executor against its task slots)
 * and the diagnosis' findings. The in-cell view shows it under a group's
 * line, the sidebar in a group's collapsed <details>.
 *
 * The texts follow the kernel's static rendering (cells/inside_render.py),
 * which a saved notebook keeps: the live view and the saved one read alike.
 * Colours are JupyterLab's theme variables (style/base.css).
 */
import { el } from './dom';
import type { GroupInside, SlotChart, StageRow } from './protocol';

const SVG_NS = 'http://www.w3.org/2000/svg';

/** The chart's width (SVG units) in the in-cell view; the sidebar passes its own. */
export const CHART_WIDTH = 480;
/** Of it, the column of executor labels at the right. */
const LABEL_WIDTH = 80;
/** The band above the lanes where the stage ids of the ticks go. */
const MARK_BAND = 10;
/** One executor's lane: its area, and the gap under it. */
const LANE_HEIGHT = 20;
const LANE_GAP = 4;
/** Stage ids closer than this (SVG units) to the last one drawn get a tick only. */
const MARK_LABEL_SPACING = 12;
/** Lanes drawn at most: on a large cluster, the chart stays a chart. */
export const MAX_LANES = 16;

/** `512 B`, `1.2 MiB`: bytes, 1024-based, as the kernel says them. */
export function sizeText(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let size = Math.max(0, bytes);
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit === 0
    ? `${Math.round(size)} B`
    : `${size.toFixed(1)} ${units[unit]}`;
}

/** `0.25 s` below a second, `12.1 s` above. */
export function secondsText(seconds: number): string {
  return seconds < 1 ? `${seconds.toFixed(2)} s` : `${seconds.toFixed(1)} s`;
}

/** `1,200/2,000 (4 running), 1 failed`; `· failed` (or `· cancelled`) for a stage that ended so. */
export function stageTasksText(row: StageRow): string {
  let text = `${row.done.toLocaleString('en-US')}/${row.total.toLocaleString('en-US')}`;
  if (row.active) {
    text += ` (${row.active} running)`;
  }
  if (row.failed) {
    text += `, ${row.failed} failed`;
  }
  if (row.status === 'failed' || row.status === 'cancelled') {
    text += ` \u00b7 ${row.status}`;
  }
  return text;
}

/**
 * `input 1.2 MiB · shuffle write 3.0 MiB · spill 12.0 MiB disk · slowest
 * task 9.8 s, median 0.10 s`: only the figures that are not zero.
 */
export function stageFiguresText(row: StageRow): string {
  const parts: string[] = [];
  const sizes: Array<[number, string]> = [
    [row.input_bytes, 'input'],
    [row.shuffle_read_bytes, 'shuffle read'],
    [row.shuffle_write_bytes, 'shuffle write']
  ];
  for (const [bytes, label] of sizes) {
    if (bytes) {
      parts.push(`${label} ${sizeText(bytes)}`);
    }
  }
  const spills: string[] = [];
  if (row.memory_spilled_bytes) {
    spills.push(`${sizeText(row.memory_spilled_bytes)} memory`);
  }
  if (row.disk_spilled_bytes) {
    spills.push(`${sizeText(row.disk_spilled_bytes)} disk`);
  }
  if (spills.length) {
    parts.push(`spill ${spills.join(', ')}`);
  }
  if (row.max_task_seconds !== null) {
    let slowest = `slowest task ${secondsText(row.max_task_seconds)}`;
    if (row.median_task_seconds !== null) {
      slowest += `, median ${secondsText(row.median_task_seconds)}`;
    }
    parts.push(slowest);
  }
  return parts.join(' \u00b7 ');
}

/** The stages the table does not show, and why ('' when none). */
export function hiddenStagesText(inside: GroupInside): string {
  const parts: string[] = [];
  if (inside.more_stages) {
    parts.push(
      `${inside.more_stages.toLocaleString('en-US')} more stages not shown`
    );
  }
  if (inside.skipped_stages) {
    parts.push(
      `${inside.skipped_stages.toLocaleString('en-US')} skipped (their output was there already)`
    );
  }
  if (inside.unknown_stages) {
    parts.push(
      `${inside.unknown_stages.toLocaleString('en-US')} gone before the board read them (Spark keeps a bounded number of ended stages)`
    );
  }
  return parts.join(' \u00b7 ');
}

/** The stages that ran: those shown, those not shown, those Spark forgot (not the skipped). */
export function stagesRun(inside: GroupInside): number {
  return inside.stages.length + inside.more_stages + inside.unknown_stages;
}

function counted(count: number, noun: string): string {
  return `${count.toLocaleString('en-US')} ${noun}${count === 1 ? '' : 's'}`;
}

/** The two parts of a collapsed view's text: `3 stages`, `1 finding` ('' for none). */
export function insideSummaryParts(inside: GroupInside): {
  stages: string;
  findings: string;
} {
  const stages = stagesRun(inside);
  const findings = inside.findings.length;
  return {
    stages: stages ? counted(stages, 'stage') : '',
    findings: findings ? counted(findings, 'finding') : ''
  };
}

/** `3 stages · 1 finding`: what a collapsed view of it says. */
export function insideSummaryText(inside: GroupInside): string {
  const { stages, findings } = insideSummaryParts(inside);
  return [stages, findings].filter(Boolean).join(' \u00b7 ') || 'slot chart';
}

/** Whether there is nothing to show (no rows, counts, chart or findings). */
export function isEmptyInside(inside: GroupInside): boolean {
  return (
    !inside.stages.length &&
    !hiddenStagesText(inside) &&
    !inside.chart &&
    !inside.findings.length
  );
}

export interface IInsideOptions {
  /** The chart's width in SVG units: its text is drawn at that size, then scaled to fit. */
  chartWidth?: number;
}

/** The stage rows, the hidden stages' line, the slot chart and the findings. */
export function renderInside(
  inside: GroupInside,
  options: IInsideOptions = {}
): HTMLElement {
  const box = el('div', 'jp-SparkInside');
  box.dataset.testid = 'jss-inside';
  if (inside.stages.length) {
    box.appendChild(renderStageTable(inside.stages));
  }
  const hidden = hiddenStagesText(inside);
  if (hidden) {
    const line = el('div', 'jp-SparkInside-hidden', hidden);
    line.dataset.testid = 'jss-hidden-stages';
    box.appendChild(line);
  }
  if (inside.chart) {
    const chart = renderSlotChart(
      inside.chart,
      options.chartWidth ?? CHART_WIDTH
    );
    if (chart) {
      box.appendChild(chart);
    }
  }
  for (const finding of inside.findings) {
    const line = el('div', 'jp-SparkInside-finding', `\u26a0 ${finding}`);
    line.dataset.testid = 'jss-finding';
    box.appendChild(line);
  }
  return box;
}

function renderStageTable(rows: StageRow[]): HTMLTableElement {
  const table = el('table', 'jp-SparkInside-stages');
  const head = el('tr');
  for (const title of ['stage', 'code', 'tasks', 'time', 'figures']) {
    head.appendChild(el('th', undefined, title));
  }
  table.createTHead().appendChild(head);
  const body = table.createTBody();
  for (const row of rows) {
    body.appendChild(renderStageRow(row));
  }
  return table;
}

function renderStageRow(row: StageRow): HTMLTableRowElement {
  const line = el('tr', `jp-SparkInside-row jp-mod-${row.status}`);
  line.dataset.testid = 'jss-stage-row';
  line.dataset.stage = String(row.id);
  line.dataset.status = row.status;
  const attempt = row.attempt > 0 ? ` (attempt ${row.attempt + 1})` : '';
  const id = el('td', 'jp-SparkInside-stageId', `${row.id}${attempt}`);
  id.title = `Stage ${row.id} of job ${row.job}: ${row.status}`;
  // The call site can be long: one line cut with an ellipsis, whole on hover.
  const code = el('td', 'jp-SparkInside-code');
  const name = el('span', 'jp-SparkInside-codeText', row.name);
  name.title = row.name;
  code.appendChild(name);
  const figuresText = stageFiguresText(row);
  const figures = el('td', 'jp-SparkInside-figures', figuresText);
  if (figuresText) {
    figures.title = figuresText;
  }
  line.append(
    id,
    code,
    el('td', 'jp-SparkInside-tasks', stageTasksText(row)),
    el('td', 'jp-SparkInside-time', secondsText(row.elapsed)),
    figures
  );
  return line;
}

/** A sample of the chart: a time, and the running tasks on each executor. */
interface ISample {
  t: number;
  counts: number[];
}

/** A stage's start on the chart. */
interface IMark {
  t: number;
  stage: number;
}

/** The samples as numbers (the protocol types them loosely: [t, counts[]]). */
function samplesOf(chart: SlotChart): ISample[] {
  const samples: ISample[] = [];
  for (const [t, counts] of chart.samples) {
    if (typeof t === 'number' && Array.isArray(counts)) {
      samples.push({ t, counts: counts.map(c => Number(c) || 0) });
    }
  }
  return samples;
}

/** The stage starts as numbers ([t, stage id]). */
function marksOf(chart: SlotChart): IMark[] {
  const marks: IMark[] = [];
  for (const [t, stage] of chart.stage_marks) {
    if (typeof t === 'number' && typeof stage === 'number') {
      marks.push({ t, stage });
    }
  }
  return marks;
}

function svgElement<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  className?: string
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, String(value));
  }
  if (className) {
    node.setAttribute('class', className);
  }
  return node;
}

function svgTitle(text: string): SVGTitleElement {
  const title = document.createElementNS(SVG_NS, 'title');
  title.textContent = text;
  return title;
}

/** Rounded for the SVG's attributes: one decimal is finer than a pixel. */
function r(value: number): string {
  return String(Math.round(value * 10) / 10);
}

function slotsText(slots: number): string {
  return slots > 0 ? counted(slots, 'slot') : 'slots unknown';
}

/** An executor's id as its label shows it: a long one cut (whole in its lane's title). */
function shortExecutor(executor: string): string {
  return executor.length > 9 ? `${executor.slice(0, 8)}\u2026` : executor;
}

/**
 * One lane per executor: its running tasks over time as a filled step area,
 * against a dashed box as high as its task slots, its slots at the right; an
 * orange tick with the stage id where each stage started. `width` in SVG
 * units (text is drawn at that scale, the element then fits its box). Null
 * when the chart has neither a time nor a sample.
 */
export function renderSlotChart(
  chart: SlotChart,
  width: number
): HTMLElement | null {
  const samples = samplesOf(chart);
  const marks = marksOf(chart);
  const start = chart.start ?? samples[0]?.t ?? marks[0]?.t;
  const end = chart.end ?? samples[samples.length - 1]?.t ?? start;
  if (start === undefined || end === undefined) {
    return null;
  }
  const span = Math.max(end - start, 0.001);
  const plotWidth = Math.max(width - LABEL_WIDTH, 40);
  const x = (t: number) =>
    Math.min(plotWidth, Math.max(0, ((t - start) / span) * plotWidth));

  const executors = chart.executors.slice(0, MAX_LANES);
  const height = MARK_BAND + Math.max(1, executors.length) * LANE_HEIGHT;
  const svg = svgElement(
    'svg',
    {
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: 'img'
    },
    'jp-SparkInside-chart'
  );
  svg.dataset.testid = 'jss-slot-chart';
  const label = `Running tasks per executor against its task slots over ${secondsText(span)}; orange ticks: stage starts`;
  svg.setAttribute('aria-label', label);
  svg.appendChild(svgTitle(label));

  executors.forEach((executor, lane) => {
    const slots = Number(chart.slots[lane]) || 0;
    const counts = samples.map(sample => sample.counts[lane] ?? 0);
    const bottom = MARK_BAND + lane * LANE_HEIGHT + LANE_HEIGHT - LANE_GAP;
    const area = LANE_HEIGHT - LANE_GAP;
    // Above its slots when it ran more tasks than it has (slots changed):
    // the lane is scaled to the higher of the two.
    const scale = Math.max(slots, ...counts, 1);
    const y = (count: number) => bottom - (count / scale) * area;

    const group = svgElement('g', {}, 'jp-SparkInside-lane');
    group.dataset.testid = 'jss-slot-lane';
    group.dataset.executor = executor;
    group.appendChild(
      svgTitle(
        `executor ${executor}: ${slotsText(slots)}, at most ${Math.max(0, ...counts)} tasks running`
      )
    );
    if (slots > 0) {
      const high = (slots / scale) * area;
      group.appendChild(
        svgElement(
          'rect',
          { x: 0, y: r(bottom - high), width: plotWidth, height: r(high) },
          'jp-SparkInside-slots'
        )
      );
    }
    // A sample holds its count from its time until the next one (the last: until
    // the chart's end): the kernel adds a sample only when a count changed.
    const first = samples.length ? samples[0].t : start;
    const points = [`${r(x(first))},${r(bottom)}`];
    samples.forEach((sample, i) => {
      const level = r(y(counts[i]));
      const until = i + 1 < samples.length ? samples[i + 1].t : end;
      points.push(`${r(x(sample.t))},${level}`, `${r(x(until))},${level}`);
    });
    points.push(`${r(x(end))},${r(bottom)}`);
    group.appendChild(
      svgElement(
        'polygon',
        { points: points.join(' ') },
        'jp-SparkInside-running'
      )
    );
    const text = svgElement(
      'text',
      {
        x: plotWidth + 4,
        y: r(bottom - area / 2 + 3),
        'font-size': 9
      },
      'jp-SparkInside-laneLabel'
    );
    text.textContent = `${shortExecutor(executor)}: ${slotsText(slots)}`;
    group.appendChild(text);
    svg.appendChild(group);
  });

  let lastLabelX = -Infinity;
  for (const mark of marks) {
    const at = x(mark.t);
    const tick = svgElement('g', {}, 'jp-SparkInside-mark');
    tick.dataset.testid = 'jss-stage-mark';
    tick.dataset.stage = String(mark.stage);
    tick.appendChild(
      svgTitle(`stage ${mark.stage} started at +${secondsText(mark.t - start)}`)
    );
    tick.appendChild(
      svgElement(
        'line',
        { x1: r(at), y1: 0, x2: r(at), y2: height },
        'jp-SparkInside-tick'
      )
    );
    // Stages started together: one id drawn, each tick still there.
    if (at - lastLabelX >= MARK_LABEL_SPACING) {
      const nearEnd = at > plotWidth - MARK_LABEL_SPACING;
      const id = svgElement(
        'text',
        {
          x: r(nearEnd ? at - 2 : at + 2),
          y: MARK_BAND - 2,
          'font-size': 8,
          'text-anchor': nearEnd ? 'end' : 'start'
        },
        'jp-SparkInside-tickLabel'
      );
      id.textContent = String(mark.stage);
      tick.appendChild(id);
      lastLabelX = at;
    }
    svg.appendChild(tick);
  }

  const box = el('div', 'jp-SparkInside-chartBox');
  box.appendChild(svg);
  const notDrawn = chart.executors.length - executors.length;
  if (notDrawn > 0) {
    const note = el(
      'div',
      'jp-SparkInside-hidden',
      `${counted(notDrawn, 'more executor')} not drawn`
    );
    note.dataset.testid = 'jss-lanes-not-drawn';
    box.appendChild(note);
  }
  return box;
}

/**
 * A job group in the sidebar: its state, elapsed time and Cancel button, then
 * each of its jobs with a progress bar (linked to Spark's UI when the session
 * has one) and, under a job, its running stages; last, collapsed, what
 * happened inside it (insideView.ts).
 */
import { el } from './dom';
import {
  JOBS_LISTED,
  earlierJobsText,
  elapsedSeconds,
  formatDuration,
  listedJobs,
  progress,
  tasksDone
} from './format';
import {
  insideSummaryParts,
  insideSummaryText,
  isEmptyInside,
  renderInside
} from './insideView';
import type { SidebarModel } from './model';
import type { Group, GroupInside, Job, Session, Stage } from './protocol';
import { sparkJobUrl, sparkPageUrl } from './sparkUi';
import { IViewContext, sessionsLink } from './viewContext';

/** The sidebar's chart width (SVG units): at 250 px it is drawn about 1:1, its text legible. */
const SIDEBAR_CHART_WIDTH = 220;

/**
 * The groups whose inside the user opened, per sidebar (its model): the
 * sidebar draws its groups anew at each board change, and an open <details>
 * must stay open.
 */
const openInsides = new WeakMap<SidebarModel, Set<string>>();

function openInsidesOf(model: SidebarModel): Set<string> {
  let open = openInsides.get(model);
  if (!open) {
    open = new Set();
    openInsides.set(model, open);
  }
  return open;
}

/**
 * The list of `groups`; `session` is null for the groups of removed sessions
 * (their jobs get no Spark UI link).
 */
export function renderGroups(
  groups: Group[],
  session: Session | null,
  context: IViewContext
): HTMLElement {
  const list = el('div', 'jp-SparkSessions-groups');
  // A group gone from the board is forgotten: a later one of the same id (a
  // new kernel numbers its cells again) starts collapsed.
  const onBoard = new Set(context.model.board?.groups.map(g => g.id) ?? []);
  const open = openInsidesOf(context.model);
  for (const id of [...open]) {
    if (!onBoard.has(id)) {
      open.delete(id);
    }
  }
  for (const group of groups) {
    list.appendChild(renderGroup(group, session, context));
  }
  return list;
}

function renderGroup(
  group: Group,
  session: Session | null,
  context: IViewContext
): HTMLElement {
  const state = context.model.displayState(group);
  const row = el('div', 'jp-SparkSessions-group');
  row.dataset.testid = 'jss-group';
  row.dataset.group = group.id;
  row.dataset.state = state;

  const top = el('div', 'jp-SparkSessions-groupTop');
  // A long id wraps after its session's name first ("marketing_attribution:" /
  // "background"), mid-word only when that part alone is too long.
  const groupId = el('span', 'jp-SparkSessions-groupId');
  const colon = group.id.lastIndexOf(':');
  groupId.append(group.id.slice(0, colon + 1));
  if (colon >= 0) {
    groupId.append(document.createElement('wbr'), group.id.slice(colon + 1));
  }
  groupId.title = group.id;
  top.appendChild(groupId);
  const badge = el('span', `jp-SparkSessions-badge jp-mod-${state}`, state);
  top.appendChild(badge);
  const elapsed = el(
    'span',
    'jp-SparkSessions-elapsed',
    formatDuration(elapsedSeconds(group, context.now))
  );
  elapsed.title = 'Elapsed time';
  context.everySecond(now => {
    elapsed.textContent = formatDuration(elapsedSeconds(group, now));
  });
  // The elapsed time and Cancel go together to the right, under the id and
  // state when the three do not fit on one line (the sidebar's 250 px).
  const actions = el('span', 'jp-SparkSessions-groupActions');
  actions.appendChild(elapsed);
  const cancel = el('button', 'jp-SparkSessions-button', 'Cancel');
  cancel.dataset.testid = 'jss-cancel-group';
  cancel.title = `Cancel the jobs of ${group.id}`;
  cancel.disabled = state !== 'running' || !context.connected;
  cancel.addEventListener('click', () =>
    context.cancel({ groups: [group.id] })
  );
  actions.appendChild(cancel);
  top.appendChild(actions);
  row.appendChild(top);

  if (group.description) {
    const description = el(
      'div',
      'jp-SparkSessions-description',
      group.description
    );
    description.title = group.description;
    row.appendChild(description);
  }

  const expanded = context.isExpanded(group.id);
  const { shown, hidden } = listedJobs(group.jobs, expanded);
  if (hidden.length || (expanded && group.jobs.length > JOBS_LISTED)) {
    row.appendChild(renderJobsToggle(group, hidden, context));
  }
  for (const job of shown) {
    row.appendChild(renderJob(job, session, context.baseUrl));
  }
  if (group.tasks_still_running > 0) {
    row.appendChild(
      el(
        'div',
        'jp-SparkSessions-note',
        `${group.tasks_still_running} task(s) still stopping on executors.`
      )
    );
  }
  if (group.inside && !isEmptyInside(group.inside)) {
    row.appendChild(renderInsideDetails(group.id, group.inside, context));
  }
  return row;
}

/** "▸ 3 stages · 1 finding": the stage rows, chart and findings, collapsed. */
function renderInsideDetails(
  groupId: string,
  inside: GroupInside,
  context: IViewContext
): HTMLElement {
  const open = openInsidesOf(context.model);
  const details = el('details', 'jp-SparkInside-details');
  details.dataset.testid = 'jss-group-inside';
  details.open = open.has(groupId);
  const summary = el('summary', 'jp-SparkInside-summary');
  summary.dataset.testid = 'jss-group-inside-summary';
  summary.title = `What happened inside ${groupId}: its stages, its running tasks against the task slots, what the diagnosis found`;
  // The findings' count in the warning colour: seen without opening it.
  const { stages, findings } = insideSummaryParts(inside);
  if (stages) {
    summary.append(stages);
  }
  if (stages && findings) {
    summary.append(' \u00b7 ');
  }
  if (findings) {
    summary.append(el('span', 'jp-SparkInside-summaryFindings', findings));
  }
  if (!summary.textContent) {
    summary.textContent = insideSummaryText(inside);
  }
  details.appendChild(summary);
  details.appendChild(
    renderInside(inside, { chartWidth: SIDEBAR_CHART_WIDTH })
  );
  details.addEventListener('toggle', () => {
    if (details.open) {
      open.add(groupId);
    } else {
      open.delete(groupId);
    }
  });
  return details;
}

/** "▸ 19 earlier jobs: 19 succeeded", a click lists them; "▾ …" hides them again. */
function renderJobsToggle(
  group: Group,
  hidden: Job[],
  context: IViewContext
): HTMLElement {
  const expanded = hidden.length === 0;
  const text = expanded
    ? `\u25be All ${group.jobs.length} jobs`
    : `\u25b8 ${earlierJobsText(hidden)}`;
  const toggle = el('button', 'jp-SparkSessions-jobsToggle', text);
  toggle.dataset.testid = 'jss-jobs-toggle';
  toggle.setAttribute('aria-expanded', String(expanded));
  toggle.title = expanded
    ? 'List only the running job'
    : `List every job of ${group.id}`;
  toggle.addEventListener('click', () => context.toggleExpanded(group.id));
  return toggle;
}

/** A job's line (label, bar, task counts, its state once ended), then its running stages. */
function renderJob(
  job: Job,
  session: Session | null,
  baseUrl: string
): HTMLElement {
  const block = el('div', 'jp-SparkSessions-jobBlock');
  block.dataset.testid = 'jss-job';
  block.dataset.job = String(job.id);
  block.dataset.state = job.state;
  const line = el('div', 'jp-SparkSessions-job');
  line.title = job.previous_driver
    ? `${job.name}\n(on the driver before the restart)`
    : job.name;
  const jobUrl = jobLink(job, session, baseUrl);
  const label =
    jobUrl !== null
      ? sessionsLink(
          jobUrl,
          `Job ${job.id}`,
          job.operation_id
            ? `${job.name}\nOpen ${session?.name}'s queries in the Spark Connect server's UI`
            : `${job.name}\nOpen job ${job.id} in the Spark UI`
        )
      : el('span', undefined, `Job ${job.id}`);
  label.classList.add('jp-SparkSessions-jobLabel');
  if (jobUrl !== null) {
    label.dataset.testid = 'jss-job-ui-link';
  }
  line.appendChild(label);
  const bar = el('progress', 'jp-SparkSessions-progress');
  const done = tasksDone(job.tasks);
  bar.dataset.testid = 'jss-job-progress';
  bar.dataset.completed = String(done);
  bar.dataset.total = String(job.tasks.total);
  bar.dataset.status = job.status;
  bar.max = 1;
  bar.value = progress(job);
  line.appendChild(bar);
  let text = `${done}/${job.tasks.total} tasks`;
  if (job.tasks.failed > 0) {
    text += `, ${job.tasks.failed} failed`;
  }
  if (job.state !== 'running') {
    text += ` \u00b7 ${job.state}`;
  }
  line.appendChild(el('span', 'jp-SparkSessions-jobTasks', text));
  block.appendChild(line);
  if (job.state === 'failed' && job.error) {
    // Why it failed, in Spark's first line: the one fact a user debugging it needs.
    const why = el('div', 'jp-SparkSessions-jobError', job.error);
    why.dataset.testid = 'jss-job-error';
    why.title = job.error;
    block.appendChild(why);
  }
  for (const stage of job.stages ?? []) {
    block.appendChild(renderStage(stage));
  }
  return block;
}

/**
 * Where a job's number links: its page in Spark's UI; for a Connect operation
 * (whose number is the board's, not a Spark job id) the server UI's page of the
 * session's operations; nothing for a previous driver's job (its id is another
 * job on the live driver) or without a UI.
 */
export function jobLink(
  job: Job,
  session: Session | null,
  baseUrl: string
): string | null {
  if (!session) {
    return null;
  }
  if (job.operation_id) {
    return sparkPageUrl(baseUrl, session.ui_url, session.operations_page);
  }
  return job.previous_driver
    ? null
    : sparkJobUrl(baseUrl, session.ui_url ?? '', job.id);
}

/** A running stage: its own bar, and how many of its tasks run now. */
function renderStage(stage: Stage): HTMLElement {
  const line = el('div', 'jp-SparkSessions-stage');
  line.title = stage.name;
  const attempt = stage.attempt > 0 ? ` (attempt ${stage.attempt + 1})` : '';
  line.appendChild(
    el('span', 'jp-SparkSessions-stageLabel', `Stage ${stage.id}${attempt}`)
  );
  const bar = el('progress', 'jp-SparkSessions-progress jp-mod-stage');
  const done = tasksDone(stage.tasks);
  bar.dataset.testid = 'jss-stage-progress';
  bar.dataset.stage = String(stage.id);
  bar.dataset.completed = String(done);
  bar.dataset.total = String(stage.tasks.total);
  bar.dataset.active = String(stage.tasks.active);
  bar.max = 1;
  bar.value = progress(stage);
  line.appendChild(bar);
  line.appendChild(
    el(
      'span',
      'jp-SparkSessions-jobTasks',
      `${done}/${stage.tasks.total}, ${stage.tasks.active} running`
    )
  );
  return line;
}

/**
 * A session in the sidebar: its name, origin, backend and master, its share of
 * the task slots, its count of streaming queries, a link to its Spark UI, its
 * Cancel all button, its own Python packages, its files, its streaming
 * queries (queryView.ts), then its timeline (timelineView.ts) and its job
 * groups (groupView.ts).
 */
import { el } from './dom';
import { formatBytes } from './format';
import { renderGroups } from './groupView';
import type { Group, Session, SessionFile } from './protocol';
import { streamingQueriesText } from './queries';
import { renderQueries } from './queryView';
import { sparkJobsUrl } from './sparkUi';
import { IDrawnTimeline, renderTimeline } from './timelineView';
import { IViewContext, sessionsLink } from './viewContext';

export function renderSession(
  session: Session,
  context: IViewContext
): HTMLElement {
  const block = el('div', 'jp-SparkSessions-sessionBlock');
  block.appendChild(renderSessionRow(session, context));
  const packages = packagesText(session);
  if (packages) {
    block.appendChild(renderPackages(packages));
  }
  if (session.files?.length) {
    block.appendChild(renderFiles(session.files));
  }
  const queries = renderQueries(session, context);
  if (queries) {
    block.appendChild(queries);
  }

  const groups = context.model.groupsOf(session.name);
  if (groups.length) {
    block.appendChild(renderSessionTimeline(session, groups, context));
    block.appendChild(renderGroups(groups, session, context));
  } else if (!queries) {
    // A query's micro-batch jobs are its figures, not groups.
    block.appendChild(el('div', 'jp-SparkSessions-note', 'No jobs yet.'));
  }
  return block;
}

/**
 * The session's lines: its name and Cancel all (under the name when both do
 * not fit), then what it is and where it runs, on a line of its own: at
 * JupyterLab's default width (250 px) nothing is cut and nothing lies under
 * the button.
 */
function renderSessionRow(
  session: Session,
  context: IViewContext
): HTMLElement {
  const row = el('div', 'jp-SparkSessions-session');
  row.dataset.testid = 'jss-session';
  row.dataset.session = session.name;
  row.appendChild(el('span', 'jp-SparkSessions-sessionName', session.name));

  const info = el('div', 'jp-SparkSessions-sessionInfo');
  const origin = el('span', 'jp-SparkSessions-tag', session.origin);
  origin.dataset.origin = session.origin;
  info.appendChild(origin);
  info.appendChild(el('span', 'jp-SparkSessions-tag', session.backend));
  const master = el('span', 'jp-SparkSessions-master', session.master);
  master.title = session.directory
    ? `${session.master}\n${session.directory}`
    : session.master;
  info.appendChild(master);
  const share = shareText(session, context.model.groupsOf(session.name));
  if (share) {
    const slots = el('span', 'jp-SparkSessions-share', share);
    slots.dataset.testid = 'jss-session-share';
    slots.title =
      'Its tasks running now, against the task slots of the context it runs on; ' +
      "its share of the slots against other sessions': its weight (3 gets three " +
      'times the slots of 1 while both have work) and the slots it gets first ' +
      '(%spark_session share NAME --weight N --min-share N)';
    info.appendChild(slots);
  }
  const activeQueries = session.active_queries ?? 0;
  if (activeQueries > 0) {
    const streaming = el(
      'span',
      'jp-SparkSessions-share',
      streamingQueriesText(activeQueries)
    );
    streaming.dataset.testid = 'jss-session-queries';
    streaming.title = 'Its streaming queries that have not ended';
    info.appendChild(streaming);
  }
  const jobsUrl = sparkJobsUrl(context.baseUrl, session.ui_url ?? '');
  if (jobsUrl !== null) {
    const link = sessionsLink(
      jobsUrl,
      'Spark UI \u2197',
      `The Spark UI of ${session.name}'s driver (${session.ui_url}), through the Jupyter server`
    );
    link.dataset.testid = 'jss-session-ui-link';
    info.appendChild(link);
    // Strictly false: a kernel of an older version does not say.
    if (session.ui_protected === false) {
      info.appendChild(renderUnprotectedNote());
    }
  }
  if (session.disconnected) {
    const warning = el(
      'div',
      'jp-SparkSessions-error',
      `Disconnected: ${session.disconnected}`
    );
    warning.dataset.testid = 'jss-session-disconnected';
    info.appendChild(warning);
  }

  const running = context.model.runningGroupIds(session.name);
  const cancelAll = el('button', 'jp-SparkSessions-button', 'Cancel all');
  cancelAll.dataset.testid = 'jss-cancel-session';
  // The kernel stops a session's streaming queries on its cancel too.
  cancelAll.title =
    activeQueries > 0
      ? `Cancel every running job group of ${session.name} and stop its ${streamingQueriesText(activeQueries)}`
      : `Cancel every running job group of ${session.name}`;
  cancelAll.disabled =
    (running.length === 0 && activeQueries === 0) || !context.connected;
  cancelAll.addEventListener('click', () =>
    context.cancel({ session: session.name })
  );
  row.appendChild(cancelAll);
  row.appendChild(info);
  return row;
}

/**
 * One line under the link when anyone who reaches the UI's port reads it (a
 * context the user started, a cluster master's): the kernel's `info` says the
 * same.
 */
function renderUnprotectedNote(): HTMLElement {
  const note = el(
    'div',
    'jp-SparkSessions-uiNote',
    'Spark UI not protected: other local users can read it'
  );
  note.dataset.testid = 'jss-session-ui-unprotected';
  note.title =
    'This project did not start its context on a local master, so its UI ' +
    'answers anyone who reaches its port (any local user; on a cluster ' +
    "master, the network). See the project's docs/security.md.";
  return note;
}

/**
 * Its own packages on a line of their own under the session's lines: a long
 * list wraps there.
 */
function renderPackages(packages: string): HTMLElement {
  const line = el('div', 'jp-SparkSessions-packages', packages);
  line.dataset.testid = 'jss-session-packages';
  line.title =
    "The Python packages its UDFs get over the kernel's (%spark_session " +
    'create --pip, %spark_session pip; %spark_session info shows its Python)';
  return line;
}

function renderFiles(files: SessionFile[]): HTMLElement {
  const list = el('ul', 'jp-SparkSessions-files');
  for (const file of files) {
    const item = el(
      'li',
      'jp-SparkSessions-file',
      `${file.name} (${file.kind}, ${formatBytes(file.size)})`
    );
    item.dataset.testid = 'jss-session-file';
    item.dataset.file = file.name;
    list.appendChild(item);
  }
  return list;
}

/**
 * The session's timeline. Its caption says how long ago its groups ran, so it
 * follows the clock, also while nothing runs and the board sends nothing (its
 * labels stayed where the last change left them): drawn anew while a group
 * runs (its bar grows), only the caption's text moved otherwise.
 */
function renderSessionTimeline(
  session: Session,
  groups: Group[],
  context: IViewContext
): HTMLElement {
  const timeline = el('div', 'jp-SparkSessions-timeline');
  timeline.dataset.testid = 'jss-timeline';
  timeline.dataset.session = session.name;
  let drawn: IDrawnTimeline | null = null;
  const draw = (now: number) => {
    timeline.textContent = '';
    drawn = renderTimeline(timeline, groups, now, group =>
      context.model.displayState(group)
    );
  };
  draw(context.now);
  context.everySecond(now => {
    if (drawn?.live) {
      draw(now);
    } else {
      drawn?.setNow(now);
    }
  });
  return timeline;
}

/**
 * "1 of 2 slots · weight 1": the session's running tasks (its
 * groups' active ones) against its context's slots (unknown on Spark Connect),
 * and its share of them; "" when there is nothing to say.
 */
export function shareText(session: Session, groups: Group[]): string {
  const running = groups
    .filter(g => g.state === 'running' || g.state === 'cancelling')
    .reduce((sum, g) => sum + g.tasks.active, 0);
  const parts: string[] = [];
  if (session.slots > 0) {
    parts.push(`${running} of ${session.slots} slots`);
  } else if (running > 0) {
    parts.push(`${running} task${running === 1 ? '' : 's'} running`);
  }
  if (session.share) {
    parts.push(session.share);
  }
  return parts.join(' \u00b7 ');
}

/** "packages: jsspkg==1.0, -r req.txt"; "" when it has none of its own. */
export function packagesText(session: Session): string {
  return session.packages ? `packages: ${session.packages}` : '';
}

/**
 * How the sidebar shows the board's numbers and the kernel's messages:
 * progress, elapsed times, durations, sizes, one-line messages.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */
import { isFinalState } from './messages';
import type { ErrorReply, Group, Job, TaskCounts } from './protocol';

/** Collapses a message to one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The one-line message of a thrown error (or of whatever was thrown). */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    return oneLine(error.message);
  }
  return oneLine(String(error));
}

/** The one-line message of an error reply. */
export function replyErrorMessage(reply: ErrorReply): string {
  return oneLine(reply.error.message || reply.error.code || 'Request failed.');
}

/** Fraction (0 to 1) of the tasks done: (completed + skipped) / total. */
export function progress(item: { tasks: TaskCounts }): number {
  const { total, completed, skipped } = item.tasks;
  if (!total || total <= 0) {
    return 0;
  }
  return Math.min(1, Math.max(0, (completed + skipped) / total));
}

/** Tasks done (completed + skipped), for "done/total tasks" labels. */
export function tasksDone(tasks: TaskCounts): number {
  return tasks.completed + tasks.skipped;
}

/**
 * Seconds from a group's submission to its completion, or to `now` (epoch
 * seconds) while it has not completed; null when it has no submission time.
 */
export function elapsedSeconds(group: Group, now: number): number | null {
  if (group.submitted_at === null || group.submitted_at === undefined) {
    return null;
  }
  let end: number | null = group.completed_at;
  if (end === null || end === undefined) {
    if (isFinalState(group.state)) {
      const ends = group.jobs
        .map(job => job.completed_at)
        .filter((t): t is number => typeof t === 'number');
      end = ends.length ? Math.max(...ends) : null;
      if (end === null) {
        return null;
      }
    } else {
      end = now;
    }
  }
  return Math.max(0, end - group.submitted_at);
}

/** "42s", "3m 05s", "2h 01m"; an en dash for an unknown duration. */
export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) {
    return '\u2013';
  }
  const total = Math.max(0, Math.floor(seconds));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = total % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (hours > 0) {
    return `${hours}h ${pad(minutes)}m`;
  }
  if (minutes > 0) {
    return `${minutes}m ${pad(secs)}s`;
  }
  return `${secs}s`;
}

/** "512 B", "3.4 KB", "200.0 MB": sizes of session files. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A piece of a message: plain text, or code (written between backticks). */
export interface ITextSpan {
  text: string;
  code: boolean;
}

/**
 * Splits a message on its backticks, so that `%load_ext x` shows as code
 * rather than with literal backticks. An unpaired backtick stays text.
 */
export function codeSpans(message: string): ITextSpan[] {
  const spans: ITextSpan[] = [];
  const pattern = /`([^`]+)`/g;
  let last = 0;
  for (const match of message.matchAll(pattern)) {
    const at = match.index ?? 0;
    if (at > last) {
      spans.push({ text: message.slice(last, at), code: false });
    }
    spans.push({ text: match[1], code: true });
    last = at + match[0].length;
  }
  if (last < message.length) {
    spans.push({ text: message.slice(last), code: false });
  }
  return spans;
}

/** A group lists all its jobs up to this many; beyond, the running ones and a count. */
export const JOBS_LISTED = 3;

/**
 * The jobs a group lists (`shown`) and those it only counts (`hidden`): all of
 * them when expanded or when they are few; else its running jobs (the newest
 * JOBS_LISTED), or its last job when none runs. A cell running jobs in a loop
 * lists one line, not one per job.
 */
export function listedJobs(
  jobs: ReadonlyArray<Job>,
  expanded: boolean
): { shown: Job[]; hidden: Job[] } {
  if (expanded || jobs.length <= JOBS_LISTED) {
    return { shown: [...jobs], hidden: [] };
  }
  let shown = jobs.filter(job => job.state === 'running').slice(-JOBS_LISTED);
  if (shown.length === 0) {
    shown = jobs.slice(-1);
  }
  return { shown, hidden: jobs.filter(job => !shown.includes(job)) };
}

/**
 * "19 earlier jobs: 18 succeeded, 1 failed": jobs a view does not list,
 * counted by state (the panel says the same, snapshot.earlier_jobs_text).
 */
export function earlierJobsText(jobs: ReadonlyArray<Job>): string {
  const counts = new Map<string, number>();
  for (const job of jobs) {
    counts.set(job.state, (counts.get(job.state) ?? 0) + 1);
  }
  const states = [...counts].map(([state, n]) => `${n} ${state}`).join(', ');
  return `${jobs.length} earlier job${jobs.length === 1 ? '' : 's'}: ${states}`;
}

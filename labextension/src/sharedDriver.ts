/**
 * The sidebar's "Shared driver" section: the Spark Connect server shared by
 * this user's notebooks (`--remote shared`), in one line, and every
 * notebook's sessions on it with their running work and share of the slots,
 * read from the server extension (`GET jupyter-spark-sessions/api/shared-driver`,
 * server/shared_driver_route.py). Cancel of a session goes to its notebook's
 * kernel through the REST relay, as a cancel of this notebook's would.
 *
 * The render is plain DOM from the state; the poller reads the state only
 * while the sidebar is shown.
 */
import { el, externalLink } from './dom';

/** The shared server, as the server extension reports it. */
export interface ISharedServer {
  id: string;
  master: string;
  slots: number | null;
  memory_bytes: number | null;
  uptime_s: number;
  /** Its Spark UI under the Jupyter server's base URL ("" when off). */
  ui_path: string;
  /** With no notebook on it, it stops after this many seconds (null: unknown). */
  idle_stop_s?: number | null;
}

/** One session of a notebook on the shared server. */
export interface ISharedSession {
  name: string;
  /** Null when the server's UI did not tell. */
  running_jobs: number | null;
  active_tasks: number;
  slot_share: number | null;
}

/** One notebook (kernel) with sessions on the shared server. */
export interface ISharedNotebook {
  notebook: string;
  kernel_id: string;
  /** Its kernel is this Jupyter server's: Cancel can reach it. */
  this_server: boolean;
  sessions: ISharedSession[];
}

/** The whole reply. */
export interface ISharedDriverState {
  server: ISharedServer | null;
  notebooks: ISharedNotebook[];
}

/** The REST route, under the base URL. */
export const SHARED_DRIVER_ROUTE = 'jupyter-spark-sessions/api/shared-driver';

/** What the section needs besides the state. */
export interface ISharedDriverContext {
  baseUrl: string;
  /** The kernel of the notebook the sidebar follows ("" for none). */
  currentKernelId: string;
  cancel: (kernelId: string, session: string) => void;
}

/** The server's one line: master, slots, memory, uptime. */
export function serverLine(server: ISharedServer): string {
  const parts = [server.master];
  if (server.slots !== null) {
    parts.push(`${server.slots} slot${server.slots === 1 ? '' : 's'}`);
  }
  if (server.memory_bytes !== null) {
    parts.push(`${Math.round(server.memory_bytes / 2 ** 20)} MB`);
  }
  parts.push(`up ${duration(server.uptime_s)}`);
  return parts.join(' \u00b7 ');
}

/** What the section says when no notebook has a session on the server. */
export function idleLine(server: ISharedServer): string {
  const stops =
    server.idle_stop_s === null || server.idle_stop_s === undefined
      ? ''
      : `; it stops after ${duration(server.idle_stop_s)} without one`;
  return `Warm and idle: no notebook has a session on it yet${stops}.`;
}

/** A session's running work, in words. */
export function workLine(session: ISharedSession): string {
  if (session.running_jobs === null) {
    return '';
  }
  if (session.running_jobs === 0) {
    return 'idle';
  }
  const jobs = `${session.running_jobs} job${session.running_jobs === 1 ? '' : 's'}`;
  const share =
    session.slot_share === null
      ? ''
      : ` \u00b7 ${Math.round(session.slot_share * 100)}% of slots`;
  return jobs + share;
}

/** The shared server's job list under the Jupyter server's base URL. */
export function sharedDriverJobsUrl(baseUrl: string, uiPath: string): string {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  const path = uiPath.endsWith('/') ? uiPath : `${uiPath}/`;
  return `${base}${path.replace(/^\/+/, '')}jobs/`;
}

function duration(seconds: number): string {
  if (seconds < 60) {
    return `${Math.floor(seconds)} s`;
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min`;
  }
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** Replaces the content of `root` with the section (empty when no server runs). */
export function renderSharedDriver(
  root: HTMLElement,
  state: ISharedDriverState | null,
  context: ISharedDriverContext
): void {
  root.textContent = '';
  const server = state?.server;
  if (!state || !server) {
    return;
  }
  const section = el('div', 'jp-SparkSessions-sharedDriver');
  section.dataset.testid = 'jss-shared';
  section.appendChild(
    el('div', 'jp-SparkSessions-sharedTitle', 'Shared driver')
  );
  const line = el('div', 'jp-SparkSessions-sharedServer', serverLine(server));
  line.dataset.testid = 'jss-shared-server';
  if (server.ui_path) {
    line.append(' \u00b7 ');
    // Its job list, as a session's link opens (the UI's root redirects there).
    const link = externalLink(
      sharedDriverJobsUrl(context.baseUrl, server.ui_path),
      'Spark UI \u2197',
      'The shared server\u2019s Spark UI, through this Jupyter server',
      'jp-SparkSessions-link'
    );
    link.dataset.testid = 'jss-shared-ui-link';
    line.appendChild(link);
  }
  section.appendChild(line);
  if (state.notebooks.length === 0) {
    const idle = el('div', 'jp-SparkSessions-sharedIdle', idleLine(server));
    idle.dataset.testid = 'jss-shared-idle';
    section.appendChild(idle);
  }
  for (const notebook of state.notebooks) {
    const block = el('div', 'jp-SparkSessions-sharedNotebook');
    block.dataset.testid = 'jss-shared-notebook';
    block.dataset.notebook = notebook.notebook;
    const current = notebook.kernel_id === context.currentKernelId;
    const name = el(
      'div',
      'jp-SparkSessions-sharedNotebookName',
      notebook.notebook + (current ? ' (this notebook)' : '')
    );
    name.title = notebook.notebook;
    block.appendChild(name);
    for (const session of notebook.sessions) {
      const row = el('div', 'jp-SparkSessions-sharedSession');
      row.dataset.testid = 'jss-shared-session';
      row.dataset.session = session.name;
      row.appendChild(el('span', 'jp-SparkSessions-sessionName', session.name));
      row.appendChild(
        el('span', 'jp-SparkSessions-sharedWork', workLine(session))
      );
      const cancel = el('button', 'jp-SparkSessions-button', 'Cancel');
      cancel.dataset.testid = 'jss-shared-cancel';
      if (!notebook.this_server) {
        cancel.disabled = true;
        cancel.title = 'Its kernel runs outside this Jupyter server';
      } else if (!session.running_jobs) {
        cancel.disabled = true;
        cancel.title = 'Nothing runs';
      } else {
        cancel.title = `Cancel the running work of '${session.name}' in ${notebook.notebook}`;
        cancel.onclick = () => {
          cancel.disabled = true;
          context.cancel(notebook.kernel_id, session.name);
        };
      }
      row.appendChild(cancel);
      block.appendChild(row);
    }
    section.appendChild(block);
  }
  root.appendChild(section);
}

/**
 * Where the sidebar stands with the current notebook's kernel, and the words it
 * uses for each status.
 */
import type { Session } from './protocol';

/** Where the sidebar stands with the current notebook's kernel. */
export type SidebarStatus =
  'no-kernel' | 'connecting' | 'not-loaded' | 'ready' | 'error';

/** How the header names each status. */
export const STATUS_LABELS: Record<SidebarStatus, string> = {
  'no-kernel': 'no kernel',
  connecting: 'connecting',
  'not-loaded': 'not loaded',
  ready: 'connected',
  error: 'error'
};

/** What the sidebar says instead of the sessions, per status. */
export const MESSAGES = {
  noKernel: 'Open a notebook to see its Spark sessions.',
  connecting: 'Connecting to the kernel\u2026',
  notLoaded:
    'This kernel has not loaded jupyter_spark_sessions: run `%load_ext jupyter_spark_sessions`.',
  noSessions: 'No sessions yet: run `%spark_session create NAME`.',
  error: 'Could not read the Spark sessions of this kernel.'
} as const;

/** What the header says: its status (a data attribute), words and tooltip. */
export interface IHeaderStatus {
  status: SidebarStatus | 'disconnected';
  label: string;
  title: string;
}

/**
 * The header's status: the kernel connection's, except when the kernel is
 * there but its sessions' Spark is not (the driver JVM died, the Connect
 * server went away): then "sessions disconnected", or "1 of 3 sessions
 * disconnected", with the reason as the tooltip (each session says it too).
 */
export function headerStatus(
  status: SidebarStatus,
  sessions: ReadonlyArray<Session>
): IHeaderStatus {
  const lost = sessions.filter(s => s.disconnected);
  if (status !== 'ready' || lost.length === 0) {
    return { status, label: STATUS_LABELS[status], title: '' };
  }
  const label =
    lost.length === sessions.length
      ? 'sessions disconnected'
      : `${lost.length} of ${sessions.length} sessions disconnected`;
  const reasons = [...new Set(lost.map(s => s.disconnected))];
  return { status: 'disconnected', label, title: reasons.join('\n') };
}

/**
 * Where the sidebar stands with the current notebook's kernel, and the words it
 * uses for each status.
 */

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

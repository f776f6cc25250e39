/**
 * What the sidebar's views (boardView, sessionView, groupView, queryView) get from the
 * sidebar for one render, so that they hold no state of their own.
 */
import type { SidebarCancelTarget } from './connection';
import { externalLink } from './dom';
import type { Refresh } from './elapsedTicker';
import type { SidebarModel } from './model';

export interface IViewContext {
  readonly model: SidebarModel;
  /** The time of the render (epoch seconds). */
  readonly now: number;
  /** The Jupyter server's base URL, under which the server extension serves Spark's UI (`spark-sessions/ui/{port}/`). */
  readonly baseUrl: string;
  /** Whether a connection to the kernel is open: Cancel buttons need one. */
  readonly connected: boolean;
  /** Asks the kernel to cancel (a Cancel button's click). */
  cancel(target: SidebarCancelTarget): void;
  /** Asks the kernel to stop the streaming query of this run id (a Stop button's click). */
  stopQuery(runId: string): void;
  /**
   * Registers a part that depends on the clock, redrawn while the sidebar is
   * shown: each second while a group runs, every few seconds otherwise
   * (elapsedTicker.ts).
   */
  everySecond(refresh: Refresh): void;
  /** Whether the user expanded the group's list of jobs. */
  isExpanded(groupId: string): boolean;
  /** Expands or collapses the group's list of jobs (then redraws). */
  toggleExpanded(groupId: string): void;
}

/** A link of the sidebar (to Spark's UI), opened in a new tab. */
export function sessionsLink(
  href: string,
  text: string,
  title: string
): HTMLAnchorElement {
  return externalLink(href, text, title, 'jp-SparkSessions-link');
}

/**
 * Which pages of which app get the sidebar.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */

/**
 * Whether a page can show a notebook, from the page config's `notebookPage`.
 * Notebook 7 serves each view as its own page ('tree', 'notebooks', 'edit',
 * 'consoles', 'terminals'): only 'notebooks' ever has a notebook to follow or
 * to add files to. JupyterLab sets no such option ('').
 */
export function pageShowsNotebooks(notebookPage: string): boolean {
  return notebookPage === '' || notebookPage === 'notebooks';
}

/** Where the page remembers whether the user left the sidebar open. */
export const SIDEBAR_OPEN_KEY = 'jupyter-spark-sessions:sidebar-open';

/** The part of the browser's `localStorage` the sidebar uses. */
export interface ISidebarStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/**
 * Remembers whether the sidebar is open. Notebook 7 shows each notebook on a
 * page of its own and opens none of its side panels there: the sidebar was
 * closed again on every other notebook the user opened.
 */
export function rememberSidebarOpen(
  storage: ISidebarStorage | null,
  open: boolean
): void {
  try {
    storage?.setItem(SIDEBAR_OPEN_KEY, open ? 'true' : 'false');
  } catch {
    // storage full or refused (private mode): nothing remembered
  }
}

/**
 * Whether a Notebook 7 notebook page should open the sidebar by itself: the
 * user left it open on the last page that showed it. JupyterLab restores its
 * own layout ('' page): never there.
 */
export function reopenSidebar(
  storage: ISidebarStorage | null,
  notebookPage: string
): boolean {
  if (notebookPage !== 'notebooks') {
    return false;
  }
  try {
    return storage?.getItem(SIDEBAR_OPEN_KEY) === 'true';
  } catch {
    return false;
  }
}

/**
 * Notebook 7's command behind View > Right Sidebar > "Show Spark Sessions"
 * (and the palette's "Show Spark Sessions in the right sidebar"): it shows the
 * panel, or hides it when it is the panel shown.
 */
export const TOGGLE_PANEL_COMMAND = 'application:toggle-panel';

/** A command that ran, as the command registry's `commandExecuted` tells it. */
export interface IExecutedCommand {
  id: string;
  args: { readonly [key: string]: unknown };
}

/**
 * Whether Notebook 7's "Show Spark Sessions" just hid the sidebar (it was
 * open): the item says "Show", so it only shows, and the sidebar is shown
 * again at once (its × closes it). `sidebarVisible` is after the command.
 */
export function showItemHidSidebar(
  executed: IExecutedCommand,
  sidebarId: string,
  sidebarVisible: boolean
): boolean {
  return (
    executed.id === TOGGLE_PANEL_COMMAND &&
    executed.args?.id === sidebarId &&
    !sidebarVisible
  );
}

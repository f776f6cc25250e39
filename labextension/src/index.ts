import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';

import { addFileCommand, ADD_FILE_COMMAND } from './addfile';
import { cellProgressPlugin } from './cellProgressPlugin';
import { sqlHighlightPlugin } from './sqlHighlightPlugin';
import {
  pageShowsNotebooks,
  rememberSidebarOpen,
  reopenSidebar,
  showItemHidSidebar
} from './appPage';
import { withStatusUntracked } from './messages';
import { SIDEBAR_ID, SparkSessionsSidebar } from './sidebar';

export { ADD_FILE_COMMAND, SIDEBAR_ID };

/** Where the sidebar sits among the right area's panels. */
const SIDEBAR_RANK = 900;
/**
 * The page option listing the message types whose statuses the kernel
 * connection of JupyterLab 4 and Notebook 7 does not take for the kernel's.
 */
const UNTRACKED_OPTION = 'untracked_message_types';

/**
 * The Spark Sessions sidebar: the sessions of the current notebook's kernel,
 * their job groups with per-job progress, and cancel buttons; and the file
 * browser's "Add to Spark Session…" command. Works in JupyterLab and in
 * Notebook 7 (the shell's `add(widget, 'right')` is common to both).
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-spark-sessions:sidebar',
  description: 'Spark sessions and their running job groups.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IFileBrowserFactory],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    factory: IFileBrowserFactory | null
  ) => {
    const notebookPage = PageConfig.getOption('notebookPage');
    if (!pageShowsNotebooks(notebookPage)) {
      return;
    }
    // The kernel's status follows its main shell, not the sidebar's requests.
    PageConfig.setOption(
      UNTRACKED_OPTION,
      withStatusUntracked(PageConfig.getOption(UNTRACKED_OPTION))
    );
    const storage = pageStorage();
    const sidebar = new SparkSessionsSidebar(tracker, undefined, {
      onShown: shown => rememberSidebarOpen(storage, shown)
    });
    app.shell.add(sidebar, 'right', { rank: SIDEBAR_RANK });
    if (reopenSidebar(storage, notebookPage)) {
      // Notebook 7: open again on this notebook's page, as on the last one.
      void app.restored.then(() => app.shell.activateById(SIDEBAR_ID));
    }
    app.commands.commandExecuted.connect((_, executed) => {
      if (showItemHidSidebar(executed, SIDEBAR_ID, sidebar.isVisible)) {
        app.shell.activateById(SIDEBAR_ID); // "Show" only shows
      }
    });
    if (factory) {
      // "Add to Spark Session…" in the file browser's context menu (files only)
      addFileCommand(app, factory, sidebar);
    }
  }
};

/** The page's localStorage, or null where the browser refuses it. */
function pageStorage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

export default [plugin, cellProgressPlugin, sqlHighlightPlugin];

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';

import { addFileCommand, ADD_FILE_COMMAND } from './addfile';
import { cellProgressPlugin } from './cellProgressPlugin';
import { pageShowsNotebooks } from './appPage';
import { SIDEBAR_ID, SparkSessionsSidebar } from './sidebar';

export { ADD_FILE_COMMAND, SIDEBAR_ID };

/** Where the sidebar sits among the right area's panels. */
const SIDEBAR_RANK = 900;

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
    if (!pageShowsNotebooks(PageConfig.getOption('notebookPage'))) {
      return;
    }
    const sidebar = new SparkSessionsSidebar(tracker);
    app.shell.add(sidebar, 'right', { rank: SIDEBAR_RANK });
    if (factory) {
      // "Add to Spark Session…" in the file browser's context menu (files only)
      addFileCommand(app, factory, sidebar);
    }
  }
};

export default [plugin, cellProgressPlugin];

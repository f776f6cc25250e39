import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';

import { addFileCommand, ADD_FILE_COMMAND } from './addfile';
import { SIDEBAR_ID, SparkSessionsSidebar } from './sidebar';

export { ADD_FILE_COMMAND, SIDEBAR_ID };

/**
 * The Spark Sessions sidebar: the sessions of the current notebook's kernel,
 * their job groups with per-job progress, and cancel buttons; and the file
 * browser's "Add to Spark Session…" command.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-spark-sessions:sidebar',
  description: 'Spark sessions and their running job groups.',
  autoStart: true,
  requires: [ILabShell, INotebookTracker],
  optional: [IFileBrowserFactory],
  activate: (
    app: JupyterFrontEnd,
    labShell: ILabShell,
    tracker: INotebookTracker,
    factory: IFileBrowserFactory | null
  ) => {
    const sidebar = new SparkSessionsSidebar(tracker);
    labShell.add(sidebar, 'right', { rank: 900 });
    if (factory) {
      // "Add to Spark Session…" in the file browser's context menu (files only)
      addFileCommand(app, factory, sidebar);
    }
  }
};

export default plugin;

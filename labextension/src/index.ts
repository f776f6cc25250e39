import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { SIDEBAR_ID, SparkSessionsSidebar } from './sidebar';

export { SIDEBAR_ID };

/**
 * The Spark Sessions sidebar: the sessions of the current notebook's kernel,
 * their job groups with per-job progress, and cancel buttons.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-spark-sessions:sidebar',
  description: 'Spark sessions and their running job groups.',
  autoStart: true,
  requires: [ILabShell, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    labShell: ILabShell,
    tracker: INotebookTracker
  ) => {
    const sidebar = new SparkSessionsSidebar(tracker);
    labShell.add(sidebar, 'right', { rank: 900 });
  }
};

export default plugin;

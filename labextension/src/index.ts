import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Widget } from '@lumino/widgets';

/**
 * The id of the Spark Sessions sidebar, shared with the browser tests.
 */
export const SIDEBAR_ID = 'jupyter-spark-sessions-sidebar';

/**
 * The Spark Sessions sidebar. This first version only proves the build and
 * packaging pipeline; the sessions and job views arrive with the job board.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-spark-sessions:sidebar',
  description: 'Spark sessions and their running job groups.',
  autoStart: true,
  requires: [ILabShell],
  activate: (app: JupyterFrontEnd, labShell: ILabShell) => {
    const sidebar = new Widget();
    sidebar.id = SIDEBAR_ID;
    sidebar.addClass('jp-SparkSessions-panel');
    sidebar.title.caption = 'Spark Sessions';
    sidebar.title.label = 'Spark';
    const note = document.createElement('p');
    note.textContent =
      'Run `%load_ext jupyter_spark_sessions` in a notebook, then ' +
      '`%spark_session create NAME`.';
    sidebar.node.appendChild(note);
    labShell.add(sidebar, 'right', { rank: 900 });
  }
};

export default plugin;

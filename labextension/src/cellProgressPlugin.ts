/**
 * The plugin of the in-cell progress view (cellProgress.ts): its renderer in
 * every notebook, in JupyterLab and Notebook 7.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { addCellProgressRenderers } from './cellProgress';
import { addCellQueryRenderers } from './cellQuery';

export const cellProgressPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-spark-sessions:cell-progress',
  description:
    "A live view of a cell's Spark jobs under the cell, with Cancel, and of the streaming queries it started, with Stop.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    addCellProgressRenderers(tracker);
    addCellQueryRenderers(tracker);
  }
};

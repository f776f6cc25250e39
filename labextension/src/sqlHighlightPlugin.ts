/**
 * The plugin of `%%spark_sql` cells' SQL highlighting (sqlHighlight.ts), in
 * JupyterLab and Notebook 7.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';

import { addSparkSqlLanguage, followSqlCells } from './sqlHighlight';

export const sqlHighlightPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-spark-sessions:sql-highlight',
  description: 'SQL highlighting of the body of %%spark_sql cells.',
  autoStart: true,
  requires: [INotebookTracker, IEditorLanguageRegistry],
  activate: (
    _app: JupyterFrontEnd,
    tracker: INotebookTracker,
    languages: IEditorLanguageRegistry
  ) => {
    addSparkSqlLanguage(languages);
    followSqlCells(tracker);
  }
};

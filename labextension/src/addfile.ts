/**
 * The file browser's "Add to Spark Session…" command: adds the selected
 * file(s) to a session of the current notebook's kernel (an `add` request on
 * the comm), after one dialog to choose the session (and, for one file, how to
 * add it and its name in the session).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  Dialog,
  Notification,
  showDialog,
  showErrorMessage
} from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { Contents } from '@jupyterlab/services';

import { AddFileForm } from './addform';
import { addOutcome, inferAddKind } from './addNaming';
import { oneLine } from './format';
import { kernelRelativePath } from './paths';
import { SparkSessionsSidebar } from './sidebar';

/** The command id. */
export const ADD_FILE_COMMAND = 'jupyter-spark-sessions:add-file';
/** The command's label (also the context-menu item's). */
export const ADD_FILE_LABEL = 'Add to Spark Session\u2026';
/** The file browser items the context-menu item shows on: files only. */
export const ADD_FILE_SELECTOR = '.jp-DirListing-item[data-isdir="false"]';
/** Near the end of the file browser's context menu. */
export const ADD_FILE_RANK = 100;

const TITLE = 'Spark Sessions';

export const ADD_MESSAGES = {
  noFile: 'Select a file in the file browser first.',
  noSessions:
    'Open a notebook whose kernel has Spark sessions first (`%spark_session create NAME`).',
  notLoaded:
    'The current notebook\u2019s kernel has not loaded jupyter_spark_sessions: run `%load_ext jupyter_spark_sessions`, then `%spark_session create NAME`.'
} as const;

/** Registers the command and its file-browser context-menu item. */
export function addFileCommand(
  app: JupyterFrontEnd,
  factory: IFileBrowserFactory,
  sidebar: SparkSessionsSidebar
): void {
  const contents = app.serviceManager.contents;
  const localPath = (path: string) => contents.localPath(path);

  app.commands.addCommand(ADD_FILE_COMMAND, {
    label: ADD_FILE_LABEL,
    caption:
      'Add the selected file(s) to a Spark session of the current notebook\u2019s kernel',
    execute: async () => {
      const browser = factory.tracker.currentWidget;
      const items: Contents.IModel[] = browser
        ? Array.from(browser.selectedItems()).filter(
            item => item.type !== 'directory'
          )
        : [];
      if (items.length === 0) {
        await showErrorMessage(TITLE, ADD_MESSAGES.noFile);
        return;
      }

      const target = sidebar.currentTarget();
      if (target === null || target.model.status !== 'ready') {
        await showErrorMessage(
          TITLE,
          target?.model.status === 'not-loaded'
            ? ADD_MESSAGES.notLoaded
            : ADD_MESSAGES.noSessions
        );
        return;
      }
      const sessions = target.model.sessions().map(s => s.name);
      if (sessions.length === 0) {
        await showErrorMessage(TITLE, ADD_MESSAGES.noSessions);
        return;
      }

      const form = new AddFileForm(
        sessions,
        items.map(item => item.name)
      );
      const result = await showDialog({
        title: 'Add to Spark Session',
        body: form,
        buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Add' })],
        focusNodeSelector: 'select'
      });
      if (!result.button.accept || result.value === null) {
        return;
      }
      const { session, kind: chosenKind, alias } = result.value;
      const { connection, notebookPath } = target;
      const notebookLocalPath = localPath(notebookPath);

      for (const item of items) {
        const path = kernelRelativePath(
          notebookLocalPath,
          localPath(item.path)
        );
        const kind = chosenKind ?? inferAddKind(item.name);
        let message: string;
        try {
          const reply = await connection.addToSession(
            session,
            kind,
            path,
            alias
          );
          const outcome = addOutcome(reply, item.name, session);
          if (outcome.level === 'success') {
            Notification.success(outcome.message, { autoClose: 5000 });
            continue;
          }
          if (outcome.level === 'info') {
            Notification.info(outcome.message, { autoClose: 5000 });
            continue;
          }
          message = outcome.message;
        } catch (error) {
          message = oneLine(
            error instanceof Error ? error.message : String(error)
          );
        }
        await showErrorMessage(
          TITLE,
          `Could not add '${item.name}' to session '${session}': ${message}`
        );
      }
    }
  });

  app.contextMenu.addItem({
    command: ADD_FILE_COMMAND,
    selector: ADD_FILE_SELECTOR,
    rank: ADD_FILE_RANK
  });
}

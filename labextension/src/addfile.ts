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

import { AddChoice, AddFileForm } from './addform';
import { addOutcome, inferAddKind } from './addNaming';
import { KernelBoardConnection } from './connection';
import { errorMessage } from './format';
import { ISidebarTarget } from './kernelFollower';
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
    execute: () => addSelectedFiles(factory, sidebar, localPath)
  });

  app.contextMenu.addItem({
    command: ADD_FILE_COMMAND,
    selector: ADD_FILE_SELECTOR,
    rank: ADD_FILE_RANK
  });
}

/** A server path without its drive prefix (the contents manager's localPath). */
type LocalPath = (path: string) => string;

/**
 * The command: checks there are files and sessions, asks where and how to
 * add them, then adds them one by one.
 */
async function addSelectedFiles(
  factory: IFileBrowserFactory,
  sidebar: SparkSessionsSidebar,
  localPath: LocalPath
): Promise<void> {
  const items = selectedFiles(factory);
  if (items.length === 0) {
    await showErrorMessage(TITLE, ADD_MESSAGES.noFile);
    return;
  }
  const target = withSessions(sidebar.currentTarget());
  if (typeof target === 'string') {
    await showErrorMessage(TITLE, target);
    return;
  }
  const sessions = target.model.sessions().map(s => s.name);
  const choice = await chooseHowToAdd(
    sessions,
    items.map(item => item.name)
  );
  if (choice === null) {
    return;
  }
  const notebookLocalPath = localPath(target.notebookPath);
  for (const item of items) {
    const path = kernelRelativePath(notebookLocalPath, localPath(item.path));
    await addFile(target.connection, choice, item.name, path);
  }
}

/** The file browser's selected files (directories cannot be added). */
function selectedFiles(factory: IFileBrowserFactory): Contents.IModel[] {
  const browser = factory.tracker.currentWidget;
  return browser
    ? Array.from(browser.selectedItems()).filter(
        item => item.type !== 'directory'
      )
    : [];
}

/**
 * The followed kernel if files can be added to its sessions, else why not
 * (no kernel, its extension not loaded, no sessions).
 */
function withSessions(target: ISidebarTarget | null): ISidebarTarget | string {
  if (target === null || target.model.status !== 'ready') {
    return target?.model.status === 'not-loaded'
      ? ADD_MESSAGES.notLoaded
      : ADD_MESSAGES.noSessions;
  }
  if (target.model.sessions().length === 0) {
    return ADD_MESSAGES.noSessions;
  }
  return target;
}

/** The dialog: the session, and for one file its kind and alias; null if cancelled. */
async function chooseHowToAdd(
  sessions: string[],
  fileNames: string[]
): Promise<AddChoice | null> {
  const result = await showDialog({
    title: 'Add to Spark Session',
    body: new AddFileForm(sessions, fileNames),
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Add' })],
    focusNodeSelector: 'select'
  });
  if (!result.button.accept || result.value === null) {
    return null;
  }
  return result.value;
}

/**
 * Adds one file (`path`, relative to the kernel's working directory) and
 * says how it went: a notification, or an error dialog to dismiss before the
 * next file.
 */
async function addFile(
  connection: KernelBoardConnection,
  choice: AddChoice,
  name: string,
  path: string
): Promise<void> {
  const { session, alias } = choice;
  const kind = choice.kind ?? inferAddKind(name);
  let message: string;
  try {
    const reply = await connection.addToSession(session, kind, path, alias);
    const outcome = addOutcome(reply, name, session);
    if (outcome.level === 'success') {
      Notification.success(outcome.message, { autoClose: 5000 });
      return;
    }
    if (outcome.level === 'info') {
      Notification.info(outcome.message, { autoClose: 5000 });
      return;
    }
    message = outcome.message;
  } catch (error) {
    message = errorMessage(error);
  }
  await showErrorMessage(
    TITLE,
    `Could not add '${name}' to session '${session}': ${message}`
  );
}

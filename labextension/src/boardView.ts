/**
 * The sidebar's content for one state of the model: the header (status,
 * notebook and kernel followed), the errors, the message shown instead of
 * sessions, each session (sessionView.ts), and the groups of removed sessions.
 */
import { el } from './dom';
import { codeSpans } from './format';
import { renderGroups } from './groupView';
import { headerStatus } from './status';
import { renderSession } from './sessionView';
import { IViewContext } from './viewContext';

/**
 * Replaces the content of `root`. `notebookPath` is the followed notebook's
 * path, the header's tooltip (undefined when no notebook is followed).
 */
export function renderBoard(
  root: HTMLElement,
  context: IViewContext,
  notebookPath: string | undefined
): void {
  const model = context.model;
  root.textContent = '';

  root.appendChild(renderHeader(context, notebookPath));

  if (model.error) {
    const error = el('div', 'jp-SparkSessions-error', model.error);
    error.dataset.testid = 'jss-error';
    error.title = model.error;
    root.appendChild(error);
  }

  const board = model.board;
  if (board?.error) {
    const warning = el('div', 'jp-SparkSessions-warning', board.error);
    warning.dataset.testid = 'jss-board-warning';
    root.appendChild(warning);
  }

  const empty = model.emptyMessage();
  if (empty !== null) {
    const message = el('p', 'jp-SparkSessions-empty');
    appendMessage(message, empty);
    message.dataset.testid = 'jss-empty';
    root.appendChild(message);
    if (model.status === 'no-kernel') {
      const hint = el('p', 'jp-SparkSessions-hint');
      appendMessage(
        hint,
        'In the notebook, run `%load_ext jupyter_spark_sessions`, ' +
          'then `%spark_session create NAME`.'
      );
      root.appendChild(hint);
    }
  }

  if (board) {
    for (const session of model.sessions()) {
      root.appendChild(renderSession(session, context));
    }
    const orphans = model.orphanGroups();
    if (orphans.length) {
      const section = el('div', 'jp-SparkSessions-sessionBlock');
      section.appendChild(
        el('div', 'jp-SparkSessions-orphans', 'Groups of removed sessions')
      );
      section.appendChild(renderGroups(orphans, null, context));
      root.appendChild(section);
    }
    if (board.other_running_jobs > 0) {
      root.appendChild(
        el(
          'div',
          'jp-SparkSessions-note',
          `${board.other_running_jobs} running job(s) outside managed sessions.`
        )
      );
    }
  }
}

/** The title, the connection status, and the notebook and kernel followed. */
function renderHeader(
  context: IViewContext,
  notebookPath: string | undefined
): HTMLElement {
  const model = context.model;
  const header = el('div', 'jp-SparkSessions-header');
  const top = el('div', 'jp-SparkSessions-headerTop');
  top.appendChild(el('span', 'jp-SparkSessions-title', 'Spark Sessions'));
  const shown = headerStatus(model.status, model.sessions());
  const status = el('span', 'jp-SparkSessions-status', shown.label);
  status.dataset.testid = 'jss-status';
  status.dataset.status = shown.status;
  if (shown.title) {
    status.title = shown.title;
  }
  top.appendChild(status);
  header.appendChild(top);
  if (model.kernelName !== null) {
    const followed = el('div', 'jp-SparkSessions-followed');
    const notebook = el(
      'span',
      'jp-SparkSessions-notebook',
      model.notebookName || 'Untitled'
    );
    notebook.dataset.testid = 'jss-notebook';
    notebook.title = notebookPath ?? model.notebookName;
    followed.appendChild(notebook);
    const kernel = el(
      'span',
      'jp-SparkSessions-kernel',
      model.kernelName || 'No kernel'
    );
    kernel.dataset.testid = 'jss-kernel';
    kernel.title = 'The notebook\u2019s kernel';
    followed.appendChild(kernel);
    header.appendChild(followed);
  }
  return header;
}

/** Appends a message, its `backticked` parts as <code>. */
function appendMessage(parent: HTMLElement, message: string): void {
  for (const span of codeSpans(message)) {
    parent.appendChild(
      span.code
        ? el('code', undefined, span.text)
        : document.createTextNode(span.text)
    );
  }
}

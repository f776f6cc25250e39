/**
 * The body of the "Add to Spark Session" dialog (a plain form, kept apart from
 * the command so it can be tested without JupyterLab).
 */
import { Widget } from '@lumino/widgets';

import { aliasToSend, defaultNameInSession, inferAddKind } from './addNaming';
import type { AddKind } from './protocol';

/** What the dialog returns: the session, and for one file its kind and alias. */
export type AddChoice = {
  session: string;
  /** Undefined for several files: each gets the kind its name implies. */
  kind?: AddKind;
  alias?: string;
};

const KIND_LABELS: [AddKind, string][] = [
  ['file', 'File (read by path)'],
  ['archive', 'Archive (unpacked into a folder)'],
  ['pyfile', 'Python file (importable)']
];

/**
 * The dialog's body: which session; for a single file also how to add it
 * (defaulting to what its name implies) and its name in the session, empty
 * for the default (shown as the placeholder).
 */
export class AddFileForm extends Widget {
  constructor(sessions: string[], fileNames: string[]) {
    super();
    this.addClass('jp-SparkSessions-addForm');
    this._fileName = fileNames.length === 1 ? fileNames[0] : null;
    const what =
      this._fileName === null
        ? `${fileNames.length} files`
        : `'${this._fileName}'`;

    this._session = document.createElement('select');
    this._session.dataset.testid = 'jss-add-session';
    for (const name of sessions) {
      this._session.appendChild(option(name, name));
    }
    this._row(`Add ${what} to the session:`, this._session);

    this._kind = document.createElement('select');
    this._kind.dataset.testid = 'jss-add-kind';
    this._alias = document.createElement('input');
    this._alias.dataset.testid = 'jss-add-alias';
    this._alias.type = 'text';
    if (this._fileName !== null) {
      for (const [kind, label] of KIND_LABELS) {
        this._kind.appendChild(option(kind, label));
      }
      this._kind.value = inferAddKind(this._fileName);
      this._kind.addEventListener('change', () => this._updateAlias());
      this._row('Add as:', this._kind);
      this._row('Name in the session (empty: the default):', this._alias);
      this._updateAlias();
    }
  }

  /** The choice, read when the user clicks Add. */
  getValue(): AddChoice {
    const session = this._session.value;
    if (this._fileName === null) {
      return { session };
    }
    const kind = this._kind.value as AddKind;
    return {
      session,
      kind,
      alias: aliasToSend(this._alias.value, this._fileName, kind)
    };
  }

  private _row(label: string, control: HTMLElement): void {
    control.classList.add('jp-mod-styled'); // JupyterLab's themed form controls
    const row = document.createElement('label');
    row.className = 'jp-SparkSessions-addRow';
    row.appendChild(document.createTextNode(label));
    row.appendChild(control);
    this.node.appendChild(row);
  }

  /** A Python file keeps its name: no alias field then. */
  private _updateAlias(): void {
    const kind = this._kind.value as AddKind;
    this._alias.disabled = kind === 'pyfile';
    this._alias.placeholder = defaultNameInSession(this._fileName ?? '', kind);
  }

  private readonly _fileName: string | null;
  private readonly _session: HTMLSelectElement;
  private readonly _kind: HTMLSelectElement;
  private readonly _alias: HTMLInputElement;
}

function option(value: string, label: string): HTMLOptionElement {
  const element = document.createElement('option');
  element.value = value;
  element.textContent = label;
  return element;
}

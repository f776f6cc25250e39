/**
 * SQL highlighting of `%%spark_sql` cells: a code cell whose first line is the
 * magic gets an editor language of its own (the magic line as it is, the body
 * as Spark SQL, with the theme's colours); every other cell keeps the
 * notebook's language. The language is the cell model's MIME type, which
 * JupyterLab and Notebook 7 turn into the editor's language; it is not saved
 * in the notebook file.
 */
import {
  LanguageSupport,
  StreamLanguage,
  StreamParser
} from '@codemirror/language';
import { sparkSQL } from '@codemirror/legacy-modes/mode/sql';
import { ICellModel } from '@jupyterlab/cells';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

/** The editor language of a `%%spark_sql` cell. */
export const SPARK_SQL_CELL_MIME = 'text/x-jupyter-spark-sessions-sql-cell';

const MAGIC_LINE = /^\s*%%spark_sql(\s|$)/;
const NAME = /^\w+$/;

/** Whether a cell's source makes it a `%%spark_sql` cell (its first line). */
export function isSparkSqlCell(source: string): boolean {
  return MAGIC_LINE.test(source);
}

interface ICellState {
  /** Still on the cell's first line: the magic's, not SQL. */
  onMagicLine: boolean;
  sql: unknown;
}

/** Spark SQL's tokens from the second line on; the first line unstyled. */
export const sparkSqlCellParser: StreamParser<ICellState> = {
  name: 'spark-sql-cell',
  startState: indentUnit => ({
    onMagicLine: true,
    sql: sparkSQL.startState ? sparkSQL.startState(indentUnit) : {}
  }),
  token: (stream, state) => {
    if (state.onMagicLine) {
      stream.skipToEnd();
      state.onMagicLine = false;
      return null;
    }
    const style = sparkSQL.token(stream, state.sql);
    // A name (a table, a column) is a token of its own, as in a Python cell: what
    // JupyterLab's completer takes for the word being typed.
    return style === null && NAME.test(stream.current()) ? 'variable' : style;
  },
  blankLine: (state, indentUnit) => {
    state.onMagicLine = false;
    sparkSQL.blankLine?.(state.sql, indentUnit);
  },
  copyState: state => ({
    onMagicLine: state.onMagicLine,
    sql: sparkSQL.copyState
      ? sparkSQL.copyState(state.sql)
      : { ...(state.sql as object) }
  }),
  languageData: sparkSQL.languageData
};

/** Register the language with the editors' language registry. */
export function addSparkSqlLanguage(languages: IEditorLanguageRegistry): void {
  languages.addLanguage({
    name: 'Spark SQL cell',
    displayName: 'Spark SQL (%%spark_sql cell)',
    mime: SPARK_SQL_CELL_MIME,
    load: async () =>
      new LanguageSupport(StreamLanguage.define(sparkSqlCellParser))
  });
}

/**
 * Keep each code cell's MIME type right as its first line changes, and when
 * the notebook sets its cells' type again (a new kernel language).
 */
export function followSqlCells(tracker: INotebookTracker): void {
  tracker.widgetAdded.connect((_, panel) => followNotebook(panel));
  tracker.forEach(followNotebook);
}

function followNotebook(panel: NotebookPanel): void {
  const followed = new WeakSet<ICellModel>();
  const notebookType = () => panel.content.codeMimetype;
  const follow = (cell: ICellModel) => {
    if (cell.type !== 'code' || followed.has(cell)) {
      return;
    }
    followed.add(cell);
    const update = () => {
      const sql = isSparkSqlCell(cell.sharedModel.getSource());
      const wanted = sql ? SPARK_SQL_CELL_MIME : notebookType();
      if (
        cell.mimeType !== wanted &&
        (sql || cell.mimeType === SPARK_SQL_CELL_MIME)
      ) {
        cell.mimeType = wanted;
      }
    };
    cell.contentChanged.connect(update);
    cell.mimeTypeChanged.connect(update);
    update();
  };
  const followAll = () => {
    const cells = panel.content.model?.cells;
    if (cells) {
      for (let i = 0; i < cells.length; i++) {
        follow(cells.get(i));
      }
    }
  };
  panel.content.modelChanged.connect(() => {
    followAll();
    panel.content.model?.cells.changed.connect(followAll);
  });
  followAll();
  panel.content.model?.cells.changed.connect(followAll);
}

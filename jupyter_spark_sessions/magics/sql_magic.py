"""The ``%%spark_sql`` cell magic (and ``%spark_sql`` line magic): a cell's SQL run in a
session, its result shown as a table a person can read, or put into a variable.

The cell's statements run in order (``sql/statements``), inside the cell's job group of
the session (``SessionRegistry.running_in``, as ``%%spark_session NAME``): progress under
the cell, Cancel from every view, Interrupt cancels only it. Only the rows shown are
fetched (one more, to know whether there are more). Every mistake in the magic's line
or the cell's text is one line before anything runs; an error Spark raises for a
statement is at most four lines (``sql/short_errors``), with Spark's own in ``%tb``.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser
from IPython.display import display

from ..backends import sql_runs, temp_views
from ..backends.spark_error_reading import cancellation_line
from ..cells.run_in_session import show_from_spark
from ..errors import SparkSessionsError, SqlStatementError
from ..sql.result_table import ResultTable, mime_bundle, variable_line
from ..sql.short_errors import missing_view, short_sql_error
from ..sql.statements import (
    BoundStatement,
    bind_variables,
    is_command,
    outcome_line,
    statement_lines,
)
from ..sql.statements import split_statements as split_sql
from .parser import python_name, whole_number

if TYPE_CHECKING:
    from ..app import SparkSessionsApp
    from ..cells.tagging import CellJobTagging

EXAMPLE = """\
Example:

    %%spark_sql etl -n 5 -o top
    CREATE OR REPLACE TEMP VIEW t AS SELECT id, id * 2 AS doubled FROM range(1000);
    SELECT * FROM t WHERE id > {low} ORDER BY id

runs both statements in session etl, shows the first 5 rows of the last one, and puts
up to --max-rows of them in the pandas DataFrame `top`; {low} is the notebook's
variable `low`, sent to Spark as a bound parameter (a DataFrame variable is read as a
table). `%spark_sql SELECT count(*) FROM t` is the one-line form (session first when
you name one: `%spark_sql etl SELECT ...`).
"""


class _Parser(MagicArgumentParser):
    """IPython's magic parser, as ``%spark_session``'s (magics/parser.py), with the
    magic's name and where its options are shown in the one-line error."""

    def error(self, message: str) -> Any:
        raise UsageError(f"%spark_sql: {message} (`%spark_sql?` shows its options).")


def _parser() -> _Parser:
    # Plain argparse formatting (IPython's writes reST markers); no abbreviations.
    parser = _Parser(  # type: ignore[no-untyped-call]
        prog="%%spark_sql", add_help=False, formatter_class=argparse.HelpFormatter
    )
    parser.allow_abbrev = False
    parser.add_argument("name", nargs="?", metavar="NAME", help="the session (default: `spark`'s)")
    parser.add_argument(
        "-n", "--rows", type=whole_number(1), metavar="N", help="rows to show (and fetch)"
    )
    parser.add_argument(
        "-o", "--output", type=python_name, metavar="VAR", help="the result as a pandas DataFrame"
    )
    parser.add_argument(
        "--max-rows", type=whole_number(1), metavar="M", help="rows -o fetches at most"
    )
    parser.add_argument(
        "--df", type=python_name, metavar="VAR", help="the result as a Spark DataFrame, not run"
    )
    parser.add_argument("--count", action="store_true", help="count every row of the result")
    parser.add_argument("-q", "--quiet", action="store_true", help="show no table")
    return parser


PARSER = _parser()
#: Options that take a value (the line form reads them before the query).
_VALUED = {"-n", "--rows", "-o", "--output", "--max-rows", "--df"}
_FLAGS = {"--count", "-q", "--quiet"}


@dataclass(frozen=True)
class SqlRequest:
    """What a ``%spark_sql`` line (and cell) asks."""

    options: argparse.Namespace
    sql: str


def parse_sql_cell(line: str, cell: str | None, session_names: set[str]) -> SqlRequest:
    """The options and the SQL of a line (cell form: ``[NAME] [options]``, the SQL is the
    cell; line form: ``[NAME] [options] query``, NAME and options in any order).
    UsageError in one line for a mistake."""
    if cell is not None:
        options = PARSER.parse_args(line.split())
        return SqlRequest(options, cell)
    taken, start = line_form_parts(line, session_names)
    sql = line[start:]
    if sql.startswith("-"):  # an unknown option: one line (`--` is argparse's end)
        PARSER.parse_args([*taken, sql.split()[0]])
    return SqlRequest(PARSER.parse_args(taken), sql)


def line_form_parts(line: str, session_names: Collection[str]) -> tuple[list[str], int]:
    """The magic's own words of a ``%spark_sql`` line (options and, when it names a
    session, NAME first, in any order) and where the query starts in ``line`` (its
    length when there is none): the query is kept as written (quotes and dashes are
    SQL's, not the magic's)."""
    words = list(re.finditer(r"\S+", line))
    taken: list[str] = []
    named = False
    index = 0
    while index < len(words):
        word = words[index].group()
        option = word.split("=", 1)[0]
        if not named and word in session_names:
            taken.insert(0, word)
            named = True
        elif option in _VALUED or option in _FLAGS:
            taken.append(word)
            if option in _VALUED and "=" not in word and index + 1 < len(words):
                index += 1
                taken.append(words[index].group())
        else:
            break  # the query (`-- a comment` is SQL's; a typo: argparse says which)
        index += 1
    return taken, words[index].start() if index < len(words) else len(line)


@magics_class
class SparkSqlMagics(Magics):
    """Registers ``%spark_sql`` / ``%%spark_sql`` on a shell."""

    def __init__(
        self, shell: InteractiveShell, app: SparkSessionsApp, tagging: CellJobTagging
    ) -> None:
        super().__init__(shell)
        self.ip = shell
        self.registry = app.registry
        self.tagging = tagging

    @line_cell_magic
    def spark_sql(self, line: str, cell: str | None = None) -> None:
        try:
            self._run(line, cell)
        except SparkSessionsError as exc:
            if isinstance(exc, SqlStatementError):
                raise  # shown as Spark's error, in its lines (cells/error_lines)
            raise UsageError(str(exc)) from None

    def _run(self, line: str, cell: str | None) -> None:
        request = parse_sql_cell(line, cell, set(self.registry.names()))
        options = request.options
        name, session = self._session(options.name)
        statements = split_sql(request.sql)
        if not statements:
            where = " in the cell" if cell is not None else ""
            raise UsageError(f"%spark_sql: there is no SQL to run{where}.")
        namespace = self.ip.user_ns
        # Every variable is checked before anything runs.
        bound = [bind_variables(s, namespace, sql_runs.is_dataframe) for s in statements]
        count = self.tagging.current_count()
        description = _first_sql_line(statements[0])
        # Each statement's jobs are named by it, at its line of the cell (a cell's body
        # starts on the cell's second line).
        shift = 1 if cell is not None else 0
        lines = [shift + n for n in statement_lines(request.sql)]
        with sql_runs.quiet_query_context_log():
            if name is None:  # the user's own SparkSession: as plain PySpark runs it
                self._execute(session, statements, bound, options, lines)
                return
            with self.registry.running_in(name, count, description):
                self._execute(session, statements, bound, options, lines, name)

    def _session(self, name: str | None) -> tuple[str | None, Any]:
        """(name, session) to run in: the one named, else the one `spark` is bound to
        (a session of the user's own: no name). Whether a registered one is usable is
        checked as its statements start (``running_in``)."""
        if name is not None:
            return name, self.registry.get(name).session
        bound = self.ip.user_ns.get("spark")
        managed = self.registry.find(bound)
        if managed is not None:
            return managed.name, managed.session
        if bound is not None and hasattr(bound, "sql") and hasattr(bound, "createDataFrame"):
            return None, bound
        raise UsageError(
            "%spark_sql: no session to run in: name one (`%%spark_sql NAME`) or bind "
            "`spark` to one (`%spark_session use NAME`)."
        )

    def _execute(
        self,
        session: Any,
        statements: list[str],
        bound: list[BoundStatement],
        options: argparse.Namespace,
        lines: list[int],
        name: str | None = None,
    ) -> None:
        *before, last = zip(statements, bound, lines, strict=True)
        for statement, call, line in before:
            with sql_runs.statement_jobs(statement, line):
                self._sql(session, statement, call, name)
        statement, call, line = last
        with sql_runs.statement_jobs(statement, line):
            self._last(session, statement, call, options, name)

    def _last(
        self,
        session: Any,
        statement: str,
        call: BoundStatement,
        options: argparse.Namespace,
        name: str | None,
    ) -> None:
        started = time.monotonic()
        frame = self._sql(session, statement, call, name)
        if options.df:
            self.ip.user_ns[options.df] = frame
            if not (options.output or is_command(statement)):
                print(f"`{options.df}` is a Spark DataFrame of {_whose(name)} (not run yet).")
                if options.quiet or options.rows is None:
                    return
        if is_command(statement):
            print(outcome_line(statement, time.monotonic() - started))
            return
        config = self.registry.config
        shown = options.rows or config.sql_display_rows
        try:
            table = self._fetch(frame, options, shown, config.sql_max_rows)
        except Exception as exc:
            _raise_short(exc, name, self._temp_view_holders)
            show_from_spark(self.ip, exc)  # from Spark's frame: none of ours
            raise
        if table is not None and not options.quiet:
            display(mime_bundle(table), raw=True)  # type: ignore[no-untyped-call]

    def _fetch(
        self, frame: Any, options: argparse.Namespace, shown: int, max_rows: int
    ) -> ResultTable | None:
        """The table the cell shows; None for ``-o`` with ``-q`` (no table: the variable
        is all, and reading its rows as Python values for a table would cost more than
        the magic's own work)."""
        # The count is shown when it is known for free (-o fetched every row) or asked
        # for (--count): counting otherwise runs the whole query again, where the shown
        # rows' fetch stops once it has them.
        total = sql_runs.count(frame) if options.count else None
        more_than = None
        if options.output:
            limit = options.max_rows or max_rows
            pandas = sql_runs.as_pandas(frame, limit)
            cut = len(pandas) > limit
            if cut:
                pandas = pandas.iloc[:limit]
                more_than = limit
            elif total is None:
                total = len(pandas)
            self.ip.user_ns[options.output] = pandas
            height, width = pandas.shape
            print(variable_line(options.output, height, width, limit if cut else None))
            if options.quiet:
                return None
            rows = _pandas_rows(pandas, shown + 1)  # shown: what the variable holds
            more = cut or len(rows) > shown
        else:
            rows = sql_runs.first_rows(frame, shown + 1)
            more = len(rows) > shown
        return ResultTable(
            sql_runs.columns(frame),
            tuple(rows[:shown]),
            more=more,
            total=total,
            more_than=more_than,
        )

    def _sql(self, session: Any, statement: str, call: BoundStatement, name: str | None) -> Any:
        try:
            return sql_runs.run_statement(session, call.sql, call.args, call.frames)
        except Exception as exc:
            _raise_short(exc, name, self._temp_view_holders)
            show_from_spark(self.ip, exc)  # from Spark's frame: none of ours
            raise

    def _temp_view_holders(self, view: str, missing_in: str) -> list[str]:
        """The other sessions that have a temporary view ``view`` (one SQL command each,
        asked after the error: ``backends/temp_views``); a session that cannot run
        anything now is not asked."""
        sessions = []
        for other in self.registry.names():
            try:
                if other != missing_in and not self.registry.backend(other).problem():
                    sessions.append((other, self.registry.get(other).session))
            except SparkSessionsError:  # stopped meanwhile
                continue
        return temp_views.sessions_with_temp_view(sessions, view)


def _raise_short(
    exc: Exception, name: str | None, holders: Callable[[str, str], list[str]] | None = None
) -> None:
    """Raise Spark's SQL error ``exc`` in its short form (``SqlStatementError``, caused
    by it); return for any other error (a cancel, a lost driver: cells/error_lines says
    those in one line; a bug keeps its traceback). ``holders(view, name)``: the other
    sessions with a temporary view ``view``, for a table or view not found in ``name``."""
    if cancellation_line(exc) is not None:
        return
    text = short_sql_error(exc)
    if text is None:
        return
    first, *rest = text.splitlines()
    if name is not None and first.startswith("[TABLE_OR_VIEW_NOT_FOUND]"):
        # Temp views are per session: one line that says which session looked.
        found = _NOT_FOUND.search(first)
        what = found.group(1) if found else "The table or view"
        view = missing_view(exc)
        others = holders(view, name) if holders is not None and view else []
        first = f"[TABLE_OR_VIEW_NOT_FOUND] {what} cannot be found in session '{name}'"
        if others:
            which = " and ".join(f"'{other}'" for other in others)
            sessions, has = ("session", "has") if len(others) == 1 else ("sessions", "have")
            quoted = "`" + (view or "").replace("`", "``") + "`"
            first += f"; {sessions} {which} {has} a temporary view {quoted}"
        first += " (a temporary view belongs to the session that made it)."
        rest = []
    raise SqlStatementError("\n".join([first, *rest])) from exc


_NOT_FOUND = re.compile(r"(The table or view \S+) cannot be found")


def _first_sql_line(statement: str) -> str:
    """How the board describes the cell's group: its first line that is not a comment."""
    lines = [line.strip() for line in statement.splitlines()]
    return next((line for line in lines if line and not line.startswith("--")), lines[0])


def _whose(name: str | None) -> str:
    return f"session '{name}'" if name else "your session"


def _pandas_rows(pandas: Any, count: int) -> list[tuple[object, ...]]:
    """The first ``count`` rows of a pandas DataFrame as Python values (NULL as None)."""
    head = pandas.head(count)
    values = head.astype(object).where(head.notna(), None)
    return [tuple(row) for row in values.itertuples(index=False, name=None)]


HELP = f"""Run SQL in a Spark session and show its result as a table.

{PARSER.format_usage().strip()}   (the cell holds the SQL)
%spark_sql [options] [NAME] QUERY                  (one line)

Statements separated by `;` run in order; the last one's result is shown (a command
such as CREATE, INSERT or SET k=v: one line saying it was done). The cell's Spark jobs
are the cell's group of the session: progress under the cell, Cancel from the
sidebar, Interrupt cancels only them.

Options:
  NAME             the session (default: the one `spark` is bound to)
  -n, --rows N     rows to show, and to fetch (default: SparkSessionsConfig.sql_display_rows)
  -o, --output VAR the result as a pandas DataFrame (at most --max-rows rows)
  --max-rows M     rows -o fetches at most (default: SparkSessionsConfig.sql_max_rows)
  --df VAR         the result as a Spark DataFrame of the session, not run
  --count          count every row, for the caption (runs the query once more)
  -q, --quiet      show no table

{{name}} in the SQL is the notebook's variable `name`: a DataFrame is read as a table,
any other value is sent as a bound parameter (write IDENTIFIER({{t}}) for a table
name held in `t`); {{{{ and }}}} are literal braces.

{EXAMPLE}"""
SparkSqlMagics.spark_sql.__doc__ = HELP

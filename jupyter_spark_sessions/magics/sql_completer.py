"""Tab in a ``%%spark_sql NAME`` cell (and after ``%spark_sql NAME ``): completions
from session NAME's own catalog, through Jupyter's ``complete_request``, so every
frontend gets them with nothing installed in the browser. A matcher of IPython's
completer (API v2, ``IPCompleter.custom_matchers``) that answers only inside a SQL cell
(suppressing Python's completions there) and leaves every other cell to IPython.

Each session's catalog is kept (``SqlCompleter``) and read again at the first Tab after
any cell ran (a cell may create a table or a temp view, in SQL or in Python). A read is
Spark metadata only (``backends/session_catalog``: never a job), made on a thread of its
own; a Tab waits for it ``READ_BUDGET_S`` at most, then answers with what was read before
(the next Tab has the new read; a session, or a table's columns, never read before is
waited for longer, once);
one that is gone, stopped or lost gets keywords alone; never an error in the editor.

Shift+Tab (``inspect_request``) in such a cell shows the name at the cursor: a table's
or view's schema (and a temp view's session), a function's ``DESCRIBE FUNCTION`` usage,
a column's type (``sql/inspection``), read on the same thread, ``INSPECT_BUDGET_S`` at
most; anything else, and every other cell, is IPython's.
"""

from __future__ import annotations

import concurrent.futures
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any

from IPython.core.error import UsageError

from ..backends import session_catalog
from ..kernel import ipykernel_internals
from ..sql import inspection
from ..sql.completion import SqlCatalog, complete, tables_named
from ..sql.statements import statement_before_cursor
from .sql_magic import line_form_parts, parse_sql_cell

log = logging.getLogger(__name__)

#: How long a Tab waits for a session's catalog being read again at most (seconds): it
#: answers with what was read before after that (a read takes ~0.2 s beside a job).
READ_BUDGET_S = 0.025
#: ... the first time (a session's first read warms Spark's catalog code: ~1 s; a table's
#: columns never read: nothing to answer with before).
FIRST_READ_BUDGET_S = 3.0
#: How long Shift+Tab waits for what it shows (a schema, a function's usage) at most.
INSPECT_BUDGET_S = 2.0
#: Tables whose columns are read for one Tab at most (those the statement names).
MAX_TABLES_READ = 8

_CELL_MAGIC = re.compile(r"^\s*%%spark_sql\b(.*)$")
_LINE_MAGIC = re.compile(r"^(\s*%spark_sql\s+)(.*)$")


@dataclass
class _Cached:
    catalog: SqlCatalog = field(default_factory=SqlCatalog)
    #: Table name (lower case) -> its columns as last read (kept while read again).
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: The tables whose columns were read since the last cell ran.
    columns_read: set[str] = field(default_factory=set)
    fresh: bool = False
    built_in: tuple[str, ...] = ()  # Spark's own functions: read once
    read_once: bool = False
    reading: concurrent.futures.Future[None] | None = None


def sql_at_cursor(
    full_text: str, line: int, column: int, session_names: Collection[str] = ()
) -> tuple[str | None, str, str] | None:
    """(the session named, or None for `spark`'s; the SQL before the cursor; after it)
    when the cursor is in a ``%%spark_sql`` cell's body or after a ``%spark_sql`` line's
    magic and options (whose first word names a session when it is one of
    ``session_names``, as the magic reads it); None elsewhere."""
    lines = full_text.split("\n")
    cell = _CELL_MAGIC.match(lines[0]) if lines else None
    if cell is not None and line > 0:
        name = _cell_session(cell.group(1))
        before = "\n".join([*lines[1:line], lines[line][:column]])
        after = "\n".join([lines[line][column:], *lines[line + 1 :]])
        return name, before, after
    magic = _LINE_MAGIC.match(lines[line][:column]) if line < len(lines) else None
    if magic is None:
        return None
    taken, start = line_form_parts(magic.group(2), session_names)
    names = [word for word in taken[:1] if word in session_names]
    rest = magic.group(2)[start:]
    return (names[0] if names else None), rest, lines[line][column:]


def _cell_session(magic_line: str) -> str | None:
    """The session a ``%%spark_sql`` line names, as the magic reads it (None: none, or a
    line still being typed that it cannot read)."""
    try:
        name: str | None = parse_sql_cell(magic_line, "", set()).options.name
    except UsageError:
        return None
    return name


class SqlCompleter:
    """The matcher and the sessions' catalogs. ``session_of(name)``: the session object
    of a managed session name (None: `spark`'s), raising when there is none."""

    def __init__(
        self,
        session_of: Callable[[str | None], tuple[str, Any]],
        variables: Callable[[], Any],
        session_names: Callable[[], Collection[str]],
    ) -> None:
        self._session_of = session_of
        self._session_names = session_names
        self._variables = variables
        self._cached: dict[str, _Cached] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jss-sql-catalog")
        #: Puts the kernel's own Shift+Tab back (set by ``install`` in a kernel).
        self.restore_inspect: Callable[[], None] = lambda: None

    def cell_ran(self, *_: object) -> None:
        """Any cell may have changed a catalog: each is read again at its next Tab (not
        now: most cells are not followed by a Tab in SQL, and a read costs Spark work)."""
        for cached in self._cached.values():
            cached.fresh = False
            cached.columns_read.clear()  # what was read answers until read again

    def match(self, context: Any) -> dict[str, Any]:
        """IPython's matcher (API v2: a ``CompletionContext`` in, a result dict out)."""
        from IPython.core.completer import SimpleCompletion

        found = sql_at_cursor(
            context.full_text,
            context.cursor_line,
            context.cursor_position,
            self._session_names(),
        )
        if found is None:
            return {"completions": [], "suppress": False}
        name, before, after = found
        catalog = self.catalog(name, before, after)
        variables = [v for v in self._variables() if v.isidentifier() and not v.startswith("_")]
        result = complete(before, catalog, variables, after)
        # Nothing to offer: the text as typed, so that IPython's other matchers (Python
        # names, magics) stay out of a SQL cell (it lets a matcher suppress the others
        # only when it has a completion).
        offered = result.matches or ((result.fragment, "sql"),)
        return {
            "completions": [SimpleCompletion(text, type=kind) for text, kind in offered],
            "matched_fragment": result.fragment,
            "suppress": True,
            "ordered": True,
        }

    match.matcher_api_version = 2  # type: ignore[attr-defined]

    def catalog(self, name: str | None, before: str, after: str = "") -> SqlCatalog:
        """Session ``name``'s catalog (keywords only when it cannot be read in time),
        with the columns of the tables the statement around the cursor names."""
        try:
            key, _ = self._session_of(name)
        except Exception:  # no such session, or none bound: keywords only
            return SqlCatalog()
        known = set(self._session_names()) | {"spark"}
        for gone in [k for k in self._cached if k not in known]:
            del self._cached[gone]  # stopped: a new session of that name starts afresh
        cached = self._cached.setdefault(key, _Cached())
        statement = (statement_before_cursor(before) or "") + " " + after.split(";", 1)[0]
        wanted = list(dict.fromkeys(tables_named(statement).values()))[:MAX_TABLES_READ]
        missing = [t for t in wanted if _key(t) not in cached.columns_read]
        if not cached.fresh and cached.reading is None:
            cached.reading = self._pool.submit(self._refresh, key, cached)
        job = cached.reading
        if missing:
            job = self._pool.submit(self._read_columns, key, cached, missing)
        if job is not None and not job.done():
            try:
                # Nothing read before to answer with: a session's first read, or the
                # columns of a table never read, is waited for longer (once).
                never_read = any(_key(t) not in cached.columns for t in missing)
                first = never_read or not cached.read_once
                job.result(timeout=FIRST_READ_BUDGET_S if first else READ_BUDGET_S)
            except concurrent.futures.TimeoutError:
                log.debug("session %r's catalog not read in time", key)
            except Exception:
                log.debug("session %r's catalog could not be read", key, exc_info=True)
        return replace(cached.catalog, columns=dict(cached.columns))

    def inspect(self, code: str, cursor_pos: int, detail_level: int = 0) -> dict[str, Any] | None:
        """The ``inspect_reply`` content for Shift+Tab at ``cursor_pos`` of ``code`` in a
        SQL cell (``found`` false when there is nothing to show); None outside one."""
        before_cursor = code[:cursor_pos]
        line = before_cursor.count("\n")
        column = len(before_cursor) - (before_cursor.rfind("\n") + 1)
        found = sql_at_cursor(code, line, column, self._session_names())
        if found is None:
            return None
        name, before, after = found
        target = inspection.target_at_cursor(before, after)
        data: dict[str, str] | None = None
        if target is not None:
            try:
                key, session = self._session_of(name)
                data = self._pool.submit(_describe, key, session, target).result(
                    timeout=INSPECT_BUDGET_S
                )
            except concurrent.futures.TimeoutError:
                log.debug("session %r: %r not described in time", name, target.name)
            except Exception:  # no such session, stopped, lost: nothing to show
                log.debug("session %r: %r not described", name, target.name, exc_info=True)
        return {"status": "ok", "found": bool(data), "data": data or {}, "metadata": {}}

    # -- on the reading thread ----------------------------------------------------------

    def _refresh(self, key: str, cached: _Cached) -> None:
        try:
            _, session = self._session_of(key)
            if not cached.built_in:
                cached.built_in = session_catalog.built_in_functions(session)
            cached.catalog = SqlCatalog(
                tables=session_catalog.tables(session),
                databases=session_catalog.databases(session),
                functions=cached.built_in + session_catalog.user_functions(session),
            )
            cached.fresh = cached.read_once = True
        except Exception:  # stopped, lost, gone: nothing of it is offered any more
            cached.catalog, cached.columns = SqlCatalog(), {}
            cached.columns_read.clear()
            raise
        finally:
            cached.reading = None

    def _read_columns(self, key: str, cached: _Cached, tables: list[str]) -> None:
        _, session = self._session_of(key)
        for table in tables:
            if _key(table) in cached.columns_read:
                continue
            try:
                cached.columns[_key(table)] = tuple(
                    c[0] for c in session_catalog.columns(session, table)
                )
            except Exception:  # not a table (any more): nothing to offer
                cached.columns[_key(table)] = ()
            cached.columns_read.add(_key(table))


def _describe(key: str, session: Any, target: inspection.InspectTarget) -> dict[str, str] | None:
    """What Shift+Tab shows for ``target`` in session ``key`` (a mime bundle), or None:
    a table or view, else a column of a table the statement names, else a function."""
    if not target.called:
        named = tables_named(target.statement)
        # `s.amount` with `s` a table or alias of the statement: a column, not a table
        # (nor a `format.path` file Spark would look for a data source of).
        of_a_table = len(target.parts) > 1 and target.parts[-2].lower() in named
        found = None if of_a_table else _table(key, session, target)
        if found is None:
            found = _column(session, target, named)
        if found is not None:
            return found
    try:
        lines = session_catalog.describe_function(session, target.name)
    except Exception:  # not a function either
        return None
    return {"text/plain": "\n".join(lines)}


def _table(key: str, session: Any, target: inspection.InspectTarget) -> dict[str, str] | None:
    try:
        columns = session_catalog.columns(session, target.name)
    except Exception:  # not a table or view
        return None
    parts = target.parts
    databases = {t.lower(): db for t, db in session_catalog.tables(session).items()}
    temp = len(parts) == 1 and databases.get(parts[0].lower()) == ""  # "": a temp view
    owner = key if temp else None
    return {
        "text/plain": inspection.table_text(target.name, columns, owner),
        "text/markdown": inspection.table_markdown(target.name, columns, owner),
    }


def _column(
    session: Any, target: inspection.InspectTarget, named: dict[str, str]
) -> dict[str, str] | None:
    read: dict[str, Any] = {}
    for table in list(dict.fromkeys(named.values()))[:MAX_TABLES_READ]:
        try:
            read[table] = session_catalog.columns(session, table)
        except Exception:  # not a table (yet)
            continue
    found = inspection.column_of(target, read)
    if found is None:
        return None
    table, (column, kind, nullable) = found
    return {"text/plain": inspection.column_text(column, kind, nullable, table)}


def _key(table: str) -> str:
    return table.split(".")[-1].strip("`").lower()


_INSTALLED: dict[int, SqlCompleter] = {}


def install(ip: Any, registry: Any) -> None:
    """Add the matcher to ``ip``'s completer; catalogs read again after each cell."""
    if id(ip) in _INSTALLED:
        return

    def session_of(name: str | None) -> tuple[str, Any]:
        if name is not None:
            return name, registry.session(name)
        bound = ip.user_ns.get("spark")
        managed = registry.find(bound)
        if managed is not None:
            return str(managed.name), managed.session
        if bound is not None and hasattr(bound, "sql"):
            return "spark", bound  # the user's own session, as %%spark_sql runs it
        raise LookupError("no session bound to `spark`")

    completer = SqlCompleter(session_of, lambda: list(ip.user_ns), registry.names)
    ip.Completer.custom_matchers.append(completer.match)
    ip.events.register("post_run_cell", completer.cell_ran)
    kernel = getattr(ip, "kernel", None)
    if kernel is not None:  # in a Jupyter kernel: Shift+Tab too
        completer.restore_inspect = ipykernel_internals.answer_inspect_requests_first(
            kernel, completer.inspect
        )
    _INSTALLED[id(ip)] = completer


def uninstall(ip: Any) -> None:
    completer = _INSTALLED.pop(id(ip), None)
    if completer is not None:
        ip.Completer.custom_matchers.remove(completer.match)
        ip.events.unregister("post_run_cell", completer.cell_ran)
        completer.restore_inspect()

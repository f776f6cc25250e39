"""What Shift+Tab (Jupyter's ``inspect_request``) shows in a SQL cell: the name at the
cursor, what kind of thing it is in the statement, and the text shown for it. Pure:
the kernel reads the session's catalog (``magics/sql_completer``).

- a table or view: its columns (name, type, nullable), and for a temporary view the
  session it belongs to (temp views are per session);
- a function (a name followed by ``(``, or the call the cursor is in): Spark's own
  ``DESCRIBE FUNCTION`` lines (its usage);
- a column of a table the statement names (``t.amount``, or ``amount``): its type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .completion import tables_named
from .statements import statement_before_cursor

_NAME_PART = r"(?:`(?:[^`]|``)*`|\w+)"
_NAME_BEFORE = re.compile(rf"(?:{_NAME_PART}\.)*(?:`(?:[^`]|``)*`|\w*)$")
_NAME_AFTER = re.compile(r"^\w*")
#: The call the cursor is in: ``upper(name, `` -> ``upper``.
_OPEN_CALL = re.compile(r"(\w+)\s*\([^()]*$")

Column = tuple[str, str, bool]  # name, type, nullable


@dataclass(frozen=True)
class InspectTarget:
    """The name at the cursor as written (``db.t``, ``s.amount``), whether it is called
    (``name(``), and the statement around the cursor (for the tables it names)."""

    name: str
    called: bool
    statement: str

    @property
    def parts(self) -> list[str]:
        return [_unquoted(p) for p in re.findall(_NAME_PART, self.name)]


def target_at_cursor(before: str, after: str) -> InspectTarget | None:
    """The name the cursor is on or just after (else the call it is in); None inside a
    string or a comment, or on no name."""
    statement = statement_before_cursor(before)
    if statement is None:
        return None
    head = _NAME_BEFORE.search(before)  # as written (the statement blanks `quoted` names)
    tail = _NAME_AFTER.match(after)
    name = (head.group() if head else "") + (tail.group() if tail else "")
    rest = after[len(tail.group()) if tail else 0 :]
    whole = statement + after.split(";", 1)[0]
    if name.strip("."):
        return InspectTarget(name.strip("."), rest.lstrip().startswith("("), whole)
    call = _OPEN_CALL.search(statement)
    if call is not None:
        return InspectTarget(call.group(1), True, whole)
    return None


def table_text(table: str, columns: Iterable[Column], owner: str | None) -> str:
    """A table's schema as plain text; ``owner``: the session a temp view belongs to."""
    rows = list(columns)
    what = f"temporary view of session '{owner}'" if owner else "table or view"
    lines = [f"{table}: {what}, {len(rows)} column{'s' if len(rows) != 1 else ''}"]
    width = max((len(name) for name, _, _ in rows), default=0)
    kind_width = max((len(kind) for _, kind, _ in rows), default=0)
    for name, kind, nullable in rows:
        null = "nullable" if nullable else "not null"
        lines.append(f"  {name.ljust(width)}  {kind.ljust(kind_width)}  {null}")
    return "\n".join(lines)


def table_markdown(table: str, columns: Iterable[Column], owner: str | None) -> str:
    what = f"temporary view of session `{owner}`" if owner else "table or view"
    lines = [f"**{table}**: {what}", "", "| column | type | nullable |", "|---|---|---|"]
    for name, kind, nullable in columns:
        lines.append(f"| {name} | {kind} | {'yes' if nullable else 'no'} |")
    return "\n".join(lines)


def column_text(column: str, kind: str, nullable: bool, table: str) -> str:
    return f"{column}: {kind}, {'nullable' if nullable else 'not null'} (column of {table})"


def column_of(
    target: InspectTarget, columns: Mapping[str, Iterable[Column]]
) -> tuple[str, Column] | None:
    """(table, column) when ``target`` names a column of a table the statement names;
    ``columns``: table as written in the statement -> its columns."""
    *qualifier, last = target.parts or [""]
    named = tables_named(target.statement)
    if qualifier:
        table = named.get(qualifier[-1].lower())
        candidates = [table] if table else []
    else:
        candidates = list(dict.fromkeys(named.values()))
    for table in candidates:
        for column in columns.get(table, ()):
            if column[0].lower() == last.lower():
                return table, column
    return None


def _unquoted(name: str) -> str:
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name

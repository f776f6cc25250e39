"""A session's catalog as SQL completion reads it: its tables and temp views, its
databases, its functions, a table's columns. Classic or Spark Connect alike, through
Spark's own commands (``SHOW TABLES``, ``SHOW DATABASES``, ``SHOW FUNCTIONS``) and a
table's analysed schema: metadata only, never a Spark job (a command's result is a
local relation; a schema is read by analysis), and never on the board.
"""

from __future__ import annotations

from typing import Any

from .connect import unwatched


def _rows(session: Any, command: str) -> list[Any]:
    # On Spark Connect a command is an operation: the extension's own, not on the board.
    with unwatched():
        return list(session.sql(command).collect())


def tables(session: Any) -> dict[str, str]:
    """Table or view name -> its database ("" for a temp view) of the current database
    and the session's temp views."""
    found = {}
    for row in _rows(session, "SHOW TABLES"):
        found[str(row["tableName"])] = "" if row["isTemporary"] else str(row["namespace"])
    return found


def databases(session: Any) -> tuple[str, ...]:
    return tuple(str(row[0]) for row in _rows(session, "SHOW DATABASES"))


def built_in_functions(session: Any) -> tuple[str, ...]:
    """Spark's own functions that have a name (not ``+`` or ``<=>``)."""
    names = (str(row[0]) for row in _rows(session, "SHOW SYSTEM FUNCTIONS"))
    return tuple(n for n in names if n.replace("_", "").isalnum())


def user_functions(session: Any) -> tuple[str, ...]:
    """The session's own functions: its UDFs and temporary functions."""
    return tuple(str(row[0]).rsplit(".", 1)[-1] for row in _rows(session, "SHOW USER FUNCTIONS"))


def columns(session: Any, table: str) -> tuple[tuple[str, str, bool], ...]:
    """(name, type, nullable) of each column of ``table`` (as written in the SQL)."""
    with unwatched():
        schema = session.table(table).schema
    return tuple((f.name, f.dataType.simpleString(), bool(f.nullable)) for f in schema.fields)


def describe_function(session: Any, name: str) -> tuple[str, ...]:
    """Spark's ``DESCRIBE FUNCTION`` lines for ``name`` (its class and usage): a command,
    never a job. Raises Spark's error for a name that is not a function."""
    quoted = ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))
    return tuple(str(row[0]) for row in _rows(session, f"DESCRIBE FUNCTION {quoted}"))

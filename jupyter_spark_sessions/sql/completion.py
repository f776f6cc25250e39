"""What Tab offers in a SQL cell: from the statement before the cursor and one
session's catalog, as read by the kernel (``sql/catalog_cache``). Pure: no Spark here.

- after ``FROM``, ``JOIN``, ``INTO``, ``TABLE``, ``UPDATE``, ``DESCRIBE`` and the like: the
  session's tables and temp views, and its databases (``db.`` then that database's
  tables);
- after ``name.``, where ``name`` is a table or an alias the statement gives one
  (``FROM sales s``, ``JOIN sales AS s``): that table's columns;
- elsewhere: the columns of the tables the statement names, SQL keywords, built-in
  functions and the session's own (UDFs);
- after ``{``: the notebook's variables (``{name}`` is a variable of the cell).

Matching is by prefix, case-insensitive; keywords come in the case being typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .statements import statement_before_cursor

#: Words after which a table (or database) name comes.
TABLE_CONTEXT = frozenset(
    {"FROM", "JOIN", "INTO", "TABLE", "UPDATE", "DESCRIBE", "DESC", "VIEW", "USING"}
)
#: Words after which a database name comes.
DATABASE_CONTEXT = frozenset({"USE", "DATABASE", "SCHEMA", "DATABASES", "IN"})

_KEYWORD_TEXT = """
SELECT FROM WHERE GROUP BY ORDER HAVING LIMIT OFFSET JOIN INNER LEFT RIGHT FULL OUTER CROSS
SEMI ANTI ON USING AS AND OR NOT IN IS NULL LIKE ILIKE RLIKE BETWEEN EXISTS CASE WHEN THEN
ELSE END DISTINCT ALL UNION INTERSECT EXCEPT WITH VALUES INSERT OVERWRITE INTO TABLE
CREATE REPLACE TEMPORARY TEMP VIEW DROP ALTER RENAME TO ADD COLUMN COLUMNS IF DELETE UPDATE
SET MERGE MATCHED DESCRIBE DESC ASC SHOW TABLES DATABASES FUNCTIONS EXPLAIN CACHE UNCACHE
REFRESH USE DATABASE SCHEMA PARTITIONED CLUSTER DISTRIBUTE SORT LATERAL PIVOT UNPIVOT
WINDOW OVER PARTITION ROWS RANGE UNBOUNDED PRECEDING FOLLOWING CURRENT ROW TRUE FALSE CAST
INTERVAL QUALIFY TABLESAMPLE NULLS FIRST LAST
"""
#: The keywords offered (Spark SQL's common ones).
KEYWORDS = tuple(_KEYWORD_TEXT.split())
#: Words the alias reader must not take for an alias (``FROM t WHERE ...``).
_NOT_ALIASES = frozenset(KEYWORDS)

_NAME_PART = r"(?:`(?:[^`]|``)*`|\w+)"
_TABLE_REF = re.compile(
    rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+({_NAME_PART}(?:\.{_NAME_PART})*)"
    rf"(?:\s+(?:AS\s+)?({_NAME_PART}))?",
    re.IGNORECASE,
)
#: The name being typed at the cursor: qualified parts, the last one possibly empty.
_TYPING = re.compile(rf"((?:{_NAME_PART}\.)*)(\w*)$")
_LAST_WORD = re.compile(r"(\w+)\W*$")


@dataclass(frozen=True)
class SqlCatalog:
    """What a session has, as the kernel last read it."""

    #: Table or view name (as Spark lists it, unqualified) -> its database ("" for a
    #: temp view).
    tables: Mapping[str, str] = field(default_factory=dict)
    databases: tuple[str, ...] = ()
    #: Built-in functions, then the session's own (UDFs, temporary functions).
    functions: tuple[str, ...] = ()
    #: Table name (lower case) -> its columns, for the tables read so far.
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SqlCompletions:
    """``fragment``: the text before the cursor the matches replace."""

    fragment: str
    matches: tuple[tuple[str, str], ...]  # (text, kind): keyword, table, column, ...


def tables_named(statement: str) -> dict[str, str]:
    """Alias (or the table's own last name part), lower case -> the table named, as
    written (``FROM db.sales s JOIN items`` -> ``{"s": "db.sales", "items": "items"}``)."""
    named: dict[str, str] = {}
    for match in _TABLE_REF.finditer(statement):
        table, alias = match.group(1), match.group(2)
        named[_unquoted(table.split(".")[-1]).lower()] = table
        if alias and alias.upper() not in _NOT_ALIASES:
            named[_unquoted(alias).lower()] = table
    return named


def complete(
    before_cursor: str, catalog: SqlCatalog, variables: Iterable[str], after_cursor: str = ""
) -> SqlCompletions:
    """The completions for a SQL cell's text up to the cursor (``after_cursor``: the
    rest, where the statement's FROM may be when the cursor is in its select list)."""
    statement = statement_before_cursor(before_cursor)
    if statement is None:  # inside a string or a comment
        return SqlCompletions("", ())
    brace = re.search(r"(?<!\{)\{(\w*)$", statement)
    if brace:
        prefix = brace.group(1)
        names = sorted(v for v in variables if v.lower().startswith(prefix.lower()))
        return SqlCompletions(prefix, tuple((f"{v}}}", "variable") for v in names))
    typing = _TYPING.search(statement)
    qualifier, prefix = (typing.group(1), typing.group(2)) if typing else ("", "")
    head = statement[: len(statement) - len(qualifier) - len(prefix)]
    word = _LAST_WORD.search(head)
    # The tables the statement names, before the cursor and after it (to its end).
    rest = re.sub(r"^\w*", "", after_cursor).split(";", 1)[0]
    context = f"{head} {rest}"
    previous = word.group(1).upper() if word else ""
    if qualifier:
        found = _qualified(qualifier[:-1], context, catalog)
    elif previous in TABLE_CONTEXT:
        found = [(t, "table") for t in sorted(catalog.tables)]
        found += [(d, "database") for d in catalog.databases]
    elif previous in DATABASE_CONTEXT:
        found = [(d, "database") for d in catalog.databases]
    else:
        found = _everything(context, catalog, prefix)
    low = prefix.lower()
    seen: set[str] = set()
    matches = []
    for text, kind in found:
        if text.lower().startswith(low) and text.lower() not in seen:
            seen.add(text.lower())
            matches.append((text, kind))
    return SqlCompletions(prefix, tuple(matches))


def _qualified(qualifier: str, statement: str, catalog: SqlCatalog) -> list[tuple[str, str]]:
    name = _unquoted(qualifier.split(".")[-1]).lower()
    table = tables_named(statement).get(name)
    if table is not None:
        columns = catalog.columns.get(_unquoted(table.split(".")[-1]).lower(), ())
        return [(c, "column") for c in columns]
    if name in (t.lower() for t in catalog.tables):
        return [(c, "column") for c in catalog.columns.get(name, ())]
    if name in (d.lower() for d in catalog.databases):
        return [(t, "table") for t, db in sorted(catalog.tables.items()) if db.lower() == name]
    return []


def _everything(statement: str, catalog: SqlCatalog, prefix: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for table in tables_named(statement).values():
        name = _unquoted(table.split(".")[-1]).lower()
        found += [(c, "column") for c in catalog.columns.get(name, ())]
    upper = not prefix or prefix[0].isupper()
    found += [(k if upper else k.lower(), "keyword") for k in KEYWORDS]
    found += [(f, "function") for f in catalog.functions]
    found += [(t, "table") for t in sorted(catalog.tables)]
    return found


def _unquoted(name: str) -> str:
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name

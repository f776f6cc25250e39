"""Spark's SQL errors in at most four lines: ``[ERROR_CLASS] message``, then, when Spark
says where, the query line and a caret under the spot.

PySpark raises the same classes in classic mode (``pyspark.errors.exceptions.captured``,
read from the JVM over py4j) and with Spark Connect (``...exceptions.connect``, read
from the server's error details); both derive from ``pyspark.errors``' base classes and
answer ``getCondition()``, ``getMessage()``, ``getMessageParameters()`` and
``getQueryContext()``. Where the position is written differs by error:

- a parse error has no query context; its text holds ``== SQL ==``, the whole query,
  and a line ``-----^^^`` under the offending line;
- an analysis or runtime error has a query context whose ``summary()`` is
  ``== SQL (line 3, position 21) ==`` (``== SQL of VIEW v (...) ==`` inside a view),
  the query line, and a caret line (runtime errors repeat it in their text).

Both end in a caret line after the query line, which is what is read here. The message
loses its ``SQLSTATE: ...`` tail, its ``; line 1 pos 7;`` and the analyzed plan or JVM
stack that follow. Errors that are not Spark's SQL errors (a Python UDF's failure, a
cancelled job, a lost connection, PySpark's own argument checks) get ``None``: the
caller lets their traceback through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The longest query line shown; a longer one is cut around the caret.
MAX_LINE_CHARS = 100
#: The longest message line shown.
MAX_MESSAGE_CHARS = 500

_CONDITION = re.compile(r"^\[([A-Z][A-Z0-9_.]*)\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+.*$")
_PARSE_POSITION = re.compile(r"\s*\(line \d+, pos \d+\)")
_ANALYSIS_POSITION = re.compile(r";\s*line \d+ pos \d+;?")
_SQL_HEADER = re.compile(r"^== SQL(?: of (?P<owner>.+?))?(?: \(line \d+, position \d+\))? ==$")
_CARET_LINE = re.compile(r"^(?P<lead>[ \t-]*)(?P<carets>\^+)\s*$")


def _sql_error_types() -> tuple[type[BaseException], ...]:
    """PySpark's base classes of the errors a SQL statement raises (the classic and
    Connect classes derive from them). Imported here: this package loads without
    PySpark's modules until an error needs them."""
    from pyspark import errors

    return (
        errors.AnalysisException,  # ParseException too
        errors.ArithmeticException,
        errors.ArrayIndexOutOfBoundsException,
        errors.DateTimeException,
        errors.IllegalArgumentException,  # NumberFormatException (CAST_INVALID_INPUT)
        errors.QueryExecutionException,
        errors.SparkNoSuchElementException,
        errors.SparkRuntimeException,
        errors.SparkUpgradeException,
        errors.UnsupportedOperationException,
    )


@dataclass(frozen=True)
class ErrorPosition:
    """Where Spark says a SQL error is: a query line, the caret's column and width in
    it, and the object whose text it is (``"VIEW v"``; ``""`` for the query itself)."""

    line: str
    column: int
    width: int
    owner: str = ""

    def lines(self, max_chars: int = MAX_LINE_CHARS) -> tuple[str, str]:
        """The query line (cut around the caret to ``max_chars``) and the caret line."""
        line, column = self.line.rstrip(), self.column
        if self.owner:
            line, column = f"{self.owner}: {line}", column + len(self.owner) + 2
        start = max(0, min(column - max_chars // 3, len(line) - max_chars))
        end = start + max_chars
        shown = ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")
        column = column - start + (1 if start else 0)
        # Tabs stay tabs under the line, so the caret lands where the eye looks.
        lead = "".join(c if c == "\t" else " " for c in shown[:column])
        width = max(1, min(self.width, len(shown) - column))
        return shown, lead + "^" * width


def _without_stack(text: str) -> str:
    return text.split("\n\nJVM stacktrace:", 1)[0].strip()


def _position_in(text: str) -> ErrorPosition | None:
    """The position a ``== SQL ... ==`` block of ``text`` marks, if any."""
    lines = text.splitlines()
    for index, header in enumerate(lines):
        found = _SQL_HEADER.match(header.strip())
        if not found:
            continue
        for number in range(index + 2, len(lines)):
            caret = _CARET_LINE.match(lines[number])
            if caret:
                return ErrorPosition(
                    line=lines[number - 1],
                    column=len(caret.group("lead")),
                    width=len(caret.group("carets")),
                    owner=found.group("owner") or "",
                )
        return None
    return None


def sql_error_position(exc: BaseException) -> ErrorPosition | None:
    """Where Spark says ``exc`` happened: from its SQL query context (analysis and
    runtime errors), else from its message's ``== SQL ==`` block (parse errors)."""
    contexts: list[Any] = getattr(exc, "getQueryContext", list)()
    for context in contexts:
        if getattr(context.contextType(), "name", "") != "SQL":
            continue
        position = _position_in(context.summary())
        if position:
            return position
    return _position_in(_without_stack(str(exc)))


def _condition(exc: BaseException, text: str) -> str | None:
    try:
        condition = exc.getCondition()  # type: ignore[attr-defined]
    except Exception:  # a JVM that went away cannot say; the text still does
        condition = None
    if isinstance(condition, str) and condition:
        return condition
    found = _CONDITION.match(text)
    return found.group(1) if found else None


def _message_line(text: str, condition: str | None) -> str:
    first = text.splitlines()[0] if text else ""
    first = _CONDITION.sub("", first, count=1)
    first = _ANALYSIS_POSITION.sub("", _PARSE_POSITION.sub("", first))
    first = " ".join(_SQLSTATE.sub("", first).split())
    line = f"[{condition}] {first}" if condition else first
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"


_NOT_FOUND_NAME = re.compile(r"The table or view (.+?) cannot be found")
_NAME_PART = re.compile(r"`((?:[^`]|``)*)`|([^.`]+)")
#: The qualifiers a temporary view can be named with (Spark 4's search path).
_TEMP_VIEW_QUALIFIERS: tuple[list[str], ...] = ([], ["session"], ["system", "session"])


def name_parts(text: str) -> list[str]:
    """A multi-part name as Spark writes it (```db`.`t` ``, ``db.t``) in its parts."""
    parts, position = [], 0
    while position < len(text):
        found = _NAME_PART.match(text, position)
        if found is None:
            return []
        quoted, plain = found.groups()
        parts.append(quoted.replace("``", "`") if quoted is not None else plain)
        position = found.end()
        if position < len(text):
            if text[position] != ".":
                return []
            position += 1
    return parts


def missing_view(exc: BaseException) -> str | None:
    """The name a ``TABLE_OR_VIEW_NOT_FOUND`` error could not find, when a temporary
    view could have had it (``v``, ``session.v``); None for any other error or name."""
    relation = None
    try:
        if exc.getCondition() != "TABLE_OR_VIEW_NOT_FOUND":  # type: ignore[attr-defined]
            return None
        relation = exc.getMessageParameters().get("relationName")  # type: ignore[attr-defined]
    except Exception:  # not one of Spark's errors, or its JVM is gone: its text says
        pass
    if not isinstance(relation, str):
        text = str(exc)
        found = _NOT_FOUND_NAME.search(text)
        if not text.startswith("[TABLE_OR_VIEW_NOT_FOUND]") or found is None:
            return None
        relation = found.group(1)
    parts = name_parts(relation)
    if not parts or [p.lower() for p in parts[:-1]] not in _TEMP_VIEW_QUALIFIERS:
        return None
    return parts[-1]


def short_sql_error(exc: BaseException) -> str | None:
    """``exc`` in at most four lines if it is one of Spark's SQL errors (parse, analysis,
    or a runtime error with an error class), else None."""
    try:
        types = _sql_error_types()
    except ImportError:
        return None
    if not isinstance(exc, types):
        return None
    try:
        text = _without_stack(str(exc))
        condition = _condition(exc, text)
        from pyspark import errors

        if condition is None and not isinstance(exc, errors.AnalysisException):
            return None  # a Java exception without an error class: its traceback says more
        lines = [_message_line(text, condition)]
        position = sql_error_position(exc)
    except Exception:  # reading a classic error asks the JVM, which may be gone
        return None
    if position is not None:
        lines.extend(position.lines())
    return "\n".join(lines)

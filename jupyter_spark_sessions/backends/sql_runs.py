"""What a ``%%spark_sql`` cell asks of Spark, for classic and Spark Connect sessions
alike (the magic parses, delegates here and prints): a statement run, its result's
columns, the rows shown, a count, the rows of ``-o`` as pandas.

Each statement's jobs are named by it (``call_site.named``): ``SELECT ... at In [5]
line 3``, on the board and in Spark's UI, not ``run_cell_magic at In [5] line 1``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..job_descriptions import shorten
from . import call_site
from . import first_rows as first_rows_as_pandas


@contextmanager
def statement_jobs(statement: str, line_offset: int) -> Iterator[None]:
    """The jobs this thread starts inside are named by ``statement`` (its lines of code
    joined, no comment lines, cut), at the cell line their call site names plus
    ``line_offset``."""
    code = (line.strip() for line in statement.splitlines())
    name = shorten(" ".join(line for line in code if line and not line.startswith("--")))
    with call_site.named(name, line_offset):
        yield


def run_statement(
    session: Any, sql: str, args: Mapping[str, Any] | None, frames: Mapping[str, Any]
) -> Any:
    """``session.sql`` of one statement: its DataFrame (a command has run already)."""
    return session.sql(sql, args=args or None, **frames)


def columns(frame: Any) -> tuple[tuple[str, str], ...]:
    """(name, type) of each column of ``frame``'s result (analysis: no job)."""
    return tuple((f.name, f.dataType.simpleString()) for f in frame.schema.fields)


def count(frame: Any) -> int:
    """Every row of the result counted (runs the query)."""
    return int(frame.count())


def first_rows(frame: Any, rows: int) -> list[tuple[Any, ...]]:
    """The first ``rows`` rows as tuples: Spark stops reading once it has them."""
    return [tuple(row) for row in frame.limit(rows).collect()]


def as_pandas(frame: Any, max_rows: int) -> Any:
    """The result as a pandas DataFrame of ``max_rows + 1`` rows at most (one more:
    whether there are more), without the extra stage of ``limit().toPandas()``."""
    return first_rows_as_pandas.as_pandas(frame, max_rows + 1)


def is_dataframe(value: object) -> bool:
    """Whether ``value`` is a PySpark DataFrame, classic or Spark Connect."""
    from pyspark.sql import DataFrame as ClassicDataFrame

    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    except ImportError:  # Spark Connect's extras are not installed
        return isinstance(value, ClassicDataFrame)
    return isinstance(value, (ClassicDataFrame, ConnectDataFrame))


#: PySpark logs each SQL error that has a query context as a JSON line on stderr
#: (``PySparkException._log_exception``; these loggers do not propagate): a SQL cell
#: says it in its own lines.
_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class _RecordsOfOtherThreads(logging.Filter):
    """Drops the records of the thread that made it."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextmanager
def quiet_query_context_log() -> Iterator[None]:
    """While a SQL cell runs, PySpark's query-context loggers skip its thread's records
    (other threads' errors still log)."""
    from pyspark.logger import PySparkLogger

    quiet = _RecordsOfOtherThreads()
    # PySpark's own factory: a plain Logger of that name would break PySpark's calls.
    loggers = [PySparkLogger.getLogger(name) for name in _QUERY_CONTEXT_LOGGERS]
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)

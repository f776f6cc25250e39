"""PySpark's process-wide choice between its classic and Spark Connect APIs.

``pyspark.sql.functions`` (``lit``, ``udf``, ``sum`` ...), ``Column`` helpers and
``SparkSession.getActiveSession`` pick their flavour at each call from the environment
variable ``SPARK_CONNECT_MODE_ENABLED`` (``pyspark.sql.utils.is_remote``), which only
``SparkSession.builder.remote(...).getOrCreate()`` sets. Binding a thread to a session
sets it to match that session, so the standard imports work in either kind; being an
environment variable, it is one per process (see docs/jobs.md for threads).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

VARIABLE = "SPARK_CONNECT_MODE_ENABLED"  # private to PySpark; checked in the tests


def use(connect: bool) -> str | None:
    """Pick the Connect (or classic) flavour; returns the previous setting (None:
    unset) for ``restore``."""
    previous = os.environ.get(VARIABLE)
    if connect:
        os.environ[VARIABLE] = "1"
    else:
        os.environ.pop(VARIABLE, None)
    return previous


def restore(previous: str | None) -> None:
    """Undo ``use``."""
    if previous is None:
        os.environ.pop(VARIABLE, None)
    else:
        os.environ[VARIABLE] = previous


@contextmanager
def classic() -> Iterator[None]:
    """PySpark's classic flavour for a block (starting a context, making a session),
    whatever session the calling cell is bound to; the JVM it may launch must not
    inherit the Connect setting either."""
    previous = use(connect=False)
    try:
        yield
    finally:
        restore(previous)

"""How Spark's own errors say what happened, read from their text (PySpark gives no
structured form for these): a cancelled job or operation, and an object of the other
PySpark API flavour (classic or Spark Connect) handed to a session. The cell's one-line
errors (``cells/error_lines``) are built on these."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

_MARKS = ("SPARK_JOB_CANCELLED", "OPERATION_CANCELED")
#: How Spark fails the calls and jobs of a SparkContext that stopped under them (an
#: OutOfMemoryError in a task of a local driver, ``sc.stop()``): Spark words the jobs'
#: end as a cancel ("Job 3 cancelled because SparkContext was shut down"), but nobody
#: cancelled them.
_STOPPED_MARKS = ("SparkContext was shut down", "stopped SparkContext")


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what caused it (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def driver_stopped(error: BaseException | None) -> bool:
    """True when ``error`` (or its cause) is how Spark fails a call or job whose
    SparkContext stopped under it."""
    return error is not None and any(
        mark in str(current) for current in error_chain(error) for mark in _STOPPED_MARKS
    )


def cancellation_line(error: BaseException) -> str | None:
    """Spark's one line saying the job or operation was cancelled, if ``error`` is
    (or was caused by) a cancellation; None for any other error, and for the jobs of a
    SparkContext that stopped (``driver_stopped``)."""
    if driver_stopped(error):
        return None
    for current in error_chain(error):
        for line in str(current).splitlines():
            line = line.strip()
            if any(mark in line for mark in _MARKS):
                start = min(line.find(mark) for mark in _MARKS if mark in line)
                line = line[max(0, line.rfind("[", 0, start + 1)) :]
                line = re.sub(r"\s+SQLSTATE: \w+\s*$", "", line)  # noise for a user
                return " ".join(line.split())[:300]
    return None


def mixes_flavours(error: BaseException, filenames: list[str]) -> bool:
    """True when ``error``, raised in PySpark's SQL code (``filenames`` of its
    traceback), is how PySpark fails on an object of the other API flavour."""
    if not any(f"{os.sep}pyspark{os.sep}sql{os.sep}" in name for name in filenames):
        return False
    text = str(error)
    return (
        (isinstance(error, TypeError) and text == "'Column' object is not callable")
        or "[JVM_ATTRIBUTE_NOT_SUPPORTED] Attribute `sparkContext`" in text
        or ("[NOT_EXPECTED_TYPE]" in text and text.rstrip(".").endswith("got Column"))
    )


_JVM_ATTRIBUTE = re.compile(r"\[JVM_ATTRIBUTE_NOT_SUPPORTED\] Attribute `(\w+)`")


def connect_lacks(error: BaseException, frames: list[tuple[str, str]]) -> str | None:
    """The JVM-only API a user's own code asked a Spark Connect object for (``spark.
    sparkContext``, ``df.rdd``, ``df._jdf``), or None. ``frames``: (file, function) of
    the traceback; PySpark's code reaching for it on the user's behalf (a classic UDF
    in a Connect session) is ``mixes_flavours``' case, not this."""
    in_pyspark = [name for file, name in frames if f"{os.sep}pyspark{os.sep}" in file]
    text = str(error)
    if text.startswith("[NOT_IMPLEMENTED] rdd is not implemented") and len(in_pyspark) == 1:
        return "rdd"
    found = _JVM_ATTRIBUTE.search(text)
    if found and in_pyspark == ["__getattr__"]:
        return found.group(1)
    return None


_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")
_PYTHON_EXCEPTION = "[PYTHON_EXCEPTION]"


def failure_line(reason: str) -> str:
    """The first line of a failure's cause, from Spark's reason for a failed stage or
    operation: the Python exception's own line for a UDF that raised
    (``ZeroDivisionError: integer division or modulo by zero``), else Spark's first line
    (``[ARITHMETIC_OVERFLOW] overflow. Use 'try_add' ...``), without ``SQLSTATE``."""
    lines = [line.rstrip() for line in reason.strip().splitlines()]
    lines = [_SQLSTATE.sub("", line) for line in lines if line.strip()]
    if not lines:
        return ""
    if _PYTHON_EXCEPTION in lines[0] or "Traceback (most recent call last)" in reason:
        # The traceback's last unindented line is the exception; Spark's own lines
        # (the Java stack, "at org.apache...") follow it in some reasons.
        ends = [line for line in lines if not line[:1].isspace() and ": " in line]
        ends = [line for line in ends if "Traceback (most recent" not in line]
        if ends and not ends[-1].startswith(_PYTHON_EXCEPTION):
            return ends[-1].strip()[:300]
    return " ".join(lines[0].split())[:300]


# How Spark words a job's cancellation (DAGScheduler: "Job 3 cancelled part of cancelled
# job group g", "... as part of cancellation of all jobs", "... because Stage 2 was
# cancelled"), with or without its error class.
_JOB_CANCELLED = re.compile(r"SPARK_JOB_CANCELLED|OPERATION_CANCELED|\bJob \d+ cancelled\b")


def names_a_cancel(kill_reason: str) -> bool:
    """Whether Spark killed a task because its job was cancelled (True), rather than
    because another task of the job failed (Spark then kills the rest with "Stage
    cancelled: <the failure>")."""
    return bool(_JOB_CANCELLED.search(kill_reason))

"""How a cell whose Spark jobs were cancelled ends: one line a user can read (and the
one line for a column or UDF of the other PySpark flavour).

A cancel (the sidebar, the panel, ``cancel``, the REST relay, the kernel's Interrupt)
makes the cell's Spark call fail with a Java or gRPC error of a hundred lines, the line
that matters buried in it. For those errors the cell shows that line only (Spark's own
``[SPARK_JOB_CANCELLED] ...`` / ``[OPERATION_CANCELED] ...``) and ends with
``KeyboardInterrupt`` when the kernel's Interrupt caused it. Every other error keeps
its traceback; ``%tb`` still shows the full one of a cancelled cell.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import ipykernel_internals

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

_MARKS = ("SPARK_JOB_CANCELLED", "OPERATION_CANCELED")


def cancellation_line(error: BaseException) -> str | None:
    """Spark's one line saying the job or operation was cancelled, if ``error`` is
    (or was caused by) a cancellation; None for any other error."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for line in str(current).splitlines():
            line = line.strip()
            if any(mark in line for mark in _MARKS):
                start = min(line.find(mark) for mark in _MARKS if mark in line)
                line = line[max(0, line.rfind("[", 0, start + 1)) :]
                line = re.sub(r"\s+SQLSTATE: \w+\s*$", "", line)  # noise for a user
                return " ".join(line.split())[:300]
        current = current.__cause__ or current.__context__
    return None


#: What a cell sees when it hands a column or UDF of one PySpark flavour (classic or
#: Spark Connect) to a session of the other: PySpark's own messages explain nothing.
MIXED_FLAVOURS = (
    "This mixes PySpark's classic and Spark Connect APIs: a column or UDF made in a cell "
    "bound to one kind of session is used in the other kind. Make it in a cell bound to "
    "the session that runs it (`%%spark_session NAME`, or after `%spark_session use NAME`)."
)


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


class CancelledCellErrors:
    """How the shell shows the errors of Spark calls (wrapping ``showtraceback``)."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.installed = False
        #: Set by the Interrupt handler while it cancels the running cell.
        self.interrupted: str | None = None

    def install(self) -> None:
        """Shorten Spark's errors from now on (at the first managed cell)."""
        if not self.installed:
            ipykernel_internals.wrap_showtraceback(self.shell, self._show)
            self.installed = True

    def _show(self, error: tuple[type[BaseException], BaseException, TracebackType | None]) -> bool:
        """Show ``error`` in one line if it is a cancellation or a mixed-flavour error;
        False (IPython shows the whole traceback) for anything else."""
        etype, value, tb = error
        line = cancellation_line(value)
        if line is None and mixes_flavours(value, [f.filename for f in traceback.extract_tb(tb)]):
            line = MIXED_FLAVOURS
        if line is None:
            return False
        sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb
        if self.interrupted is not None:
            ipykernel_internals.show_error(
                self.shell, KeyboardInterrupt, f"{self.interrupted} ({line})"
            )
        else:
            ipykernel_internals.show_error(self.shell, etype, line)
        return True

    def ended(self, result: Any) -> None:
        """After the cell: an interrupted cell whose Spark call failed because of the
        cancel ends with KeyboardInterrupt (the kernel's reply names it)."""
        interrupted, self.interrupted = self.interrupted, None
        error = getattr(result, "error_in_exec", None)
        if interrupted is not None and error is not None and cancellation_line(error):
            result.error_in_exec = KeyboardInterrupt(interrupted)

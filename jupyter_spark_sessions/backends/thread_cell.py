"""The managed cell each thread runs (session bound, execution count), set by the
thread tagger (``sessions/thread_tagger``) as it tags a thread: what a Spark Connect progress
report, which carries only its own session's tags, is filed under."""

from __future__ import annotations

import threading

_CELL = threading.local()


def current_cell() -> tuple[str, int] | None:
    """(session, execution count) of the managed cell the current thread runs, if any."""
    cell: tuple[str, int] | None = getattr(_CELL, "value", None)
    return cell


def set_current_cell(cell: tuple[str, int] | None) -> None:
    """The current thread now runs ``cell`` (None: no managed cell)."""
    _CELL.value = cell

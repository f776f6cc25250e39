"""Applies a session's job tags (``job_tags``) to the current thread, one session at a
time: a stack per thread, whose top is applied to Spark by that session's backend.

Classic sessions: tags are added with ``SparkContext.addJobTag`` in the thread that runs
the cell: PySpark pins each Python thread to its own JVM thread, and Spark keeps tags per
JVM thread. Spark Connect sessions: ``SparkSession.addTag`` (per client thread). The same
push also lends a classic isolated session's artifact state to the RDD jobs the cell
starts (Spark gives them none), so they read the session's files.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..backends.thread_cell import set_current_cell
from ..job_tags import cell_tags

if TYPE_CHECKING:
    from ..backends.base import SessionBackend


@dataclass
class _Pushed:
    backend: SessionBackend
    cell: tuple[str, int]
    tags: tuple[str, ...]
    applied: Any = None  # what the backend needs to undo it; None while not applied


class ThreadJobTagger:
    """Applies a session's tags to the current thread's jobs, one session at a time.

    A stack per thread: a cell magic that runs its body in another session pushes that
    session over the cell's own, and popping restores the cell's tags. Only the top of
    each thread's stack is applied to Spark (by the session's backend).
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def _stack(self) -> list[_Pushed]:
        stack: list[_Pushed] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def push(self, backend: SessionBackend, session_name: str, execution_count: int) -> None:
        """Tag the current thread's jobs as ``session_name``'s cell ``execution_count``."""
        stack = self._stack()
        cell = (session_name, execution_count)
        top = stack[-1] if stack else None
        if (
            top is not None
            and top.applied is not None
            and top.backend is backend
            and top.cell == cell
        ):
            # The same cell again (a `%%spark_sql a` cell bound to a): its tags are on
            # already (not suspended); two round trips to the driver each way saved.
            stack.append(top)
            return
        if stack:
            _remove(stack[-1])
        pushed = _Pushed(backend, cell, cell_tags(*cell))
        stack.append(pushed)
        _add(pushed)
        set_current_cell(cell)

    def pop(self) -> None:
        """Undo the last push on the current thread; a no-op when nothing is pushed."""
        stack = self._stack()
        if not stack:
            return
        popped = stack.pop()
        if stack and stack[-1] is popped:  # the same cell pushed again: still on
            return
        _remove(popped)
        set_current_cell(stack[-1].cell if stack else None)
        if stack:
            _add(stack[-1])

    def current_cell(self) -> tuple[str, int] | None:
        """(session, execution count) of the cell whose tags the current thread has."""
        stack = self._stack()
        return stack[-1].cell if stack else None

    def current_tags(self) -> tuple[str, ...]:
        """The tags now applied to the current thread's jobs."""
        stack = self._stack()
        return stack[-1].tags if stack else ()

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """The current thread's tags off for a ``with`` block (a streaming query started
        in it must not inherit them: ``backends/streaming_calls``)."""
        stack = self._stack()
        if not stack:
            yield
            return
        _remove(stack[-1])
        try:
            yield
        finally:
            _add(stack[-1])

    @contextmanager
    def tagged(
        self, backend: SessionBackend, session_name: str, execution_count: int
    ) -> Iterator[None]:
        """Tag the current thread's jobs for the duration of a ``with`` block."""
        self.push(backend, session_name, execution_count)
        try:
            yield
        finally:
            self.pop()


def _add(pushed: _Pushed) -> None:
    pushed.applied = pushed.backend.tag_thread(pushed.tags)


def _remove(pushed: _Pushed) -> None:
    applied, pushed.applied = pushed.applied, None
    if applied is not None:
        pushed.backend.untag_thread(applied)

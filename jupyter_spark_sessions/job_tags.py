"""The job tags that make every cell's Spark jobs attributable.

Format (documented in docs/job-tags.md):

- ``jss:<session>`` on every job a cell runs in a managed session, so a whole session's
  jobs (RDD jobs included, which carry no SQL session tag) can be cancelled at once;
- ``jss:<session>:<execution count>`` on the jobs of one cell execution: one *job group*,
  whose id shown to users is ``<session>:<execution count>``.

Session names cannot contain ``:`` or ``,`` (Spark tags cannot hold a comma), so a tag
parses back unambiguously. Classic sessions: tags are added with
``SparkContext.addJobTag`` in the thread that runs the cell: PySpark pins each Python
thread to its own JVM thread, and Spark keeps tags per JVM thread.
``SparkSession.addTag``/``interruptTag`` are NOT used there: in classic mode they are
rewritten per thread and cannot cancel from another thread. Spark Connect sessions:
``SparkSession.addTag`` (per client thread), and ``interruptTag`` works from any thread.

The same per-thread push also lends a classic isolated session's artifact state to the
RDD jobs the cell starts (Spark gives them none), so they read the session's files.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends.base import SessionBackend

TAG_PREFIX = "jss:"


def session_tag(session_name: str) -> str:
    """The tag on every job run by cells in ``session_name``."""
    return f"{TAG_PREFIX}{session_name}"


def group_id(session_name: str, execution_count: int) -> str:
    """The id of one cell execution's job group, as users see it."""
    return f"{session_name}:{execution_count}"


def group_tag(session_name: str, execution_count: int) -> str:
    """The tag on the jobs of one cell execution."""
    return f"{TAG_PREFIX}{group_id(session_name, execution_count)}"


def cell_tags(session_name: str, execution_count: int) -> tuple[str, str]:
    """The tags on the jobs of one cell execution in one session."""
    return session_tag(session_name), group_tag(session_name, execution_count)


def parse_tag(tag: str) -> tuple[str, int | None] | None:
    """``(session, execution count or None)`` for one of this project's tags, else None."""
    if not tag.startswith(TAG_PREFIX):
        return None
    body = tag[len(TAG_PREFIX) :]
    name, sep, count = body.rpartition(":")
    if not sep:
        return (body, None) if body else None
    if not name or not count.isdigit():
        return None
    return name, int(count)


BACKGROUND = "background"


def background_group_id(session_name: str) -> str:
    """The id of the group of a session's jobs that no managed cell started (a plain
    thread, a cell bound to another session or to none)."""
    return f"{session_name}:{BACKGROUND}"


# The managed cell each thread runs (session bound, execution count): what a Spark
# Connect progress report, which carries only its own session's tags, is filed under.
_CELL = threading.local()


def current_cell() -> tuple[str, int] | None:
    """(session, execution count) of the managed cell the current thread runs, if any."""
    cell: tuple[str, int] | None = getattr(_CELL, "value", None)
    return cell


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
        if stack:
            _remove(stack[-1])
        cell = (session_name, execution_count)
        pushed = _Pushed(backend, cell, cell_tags(*cell))
        stack.append(pushed)
        _add(pushed)
        _CELL.value = cell

    def pop(self) -> None:
        """Undo the last push on the current thread; a no-op when nothing is pushed."""
        stack = self._stack()
        if not stack:
            return
        _remove(stack.pop())
        _CELL.value = stack[-1].cell if stack else None
        if stack:
            _add(stack[-1])

    def current_tags(self) -> tuple[str, ...]:
        """The tags now applied to the current thread's jobs."""
        stack = self._stack()
        return stack[-1].tags if stack else ()

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

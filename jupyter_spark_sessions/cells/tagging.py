"""Tags every cell's Spark jobs with the session bound to ``spark`` and the cell's
execution count (see ``job_tags``): the first step of a cell's life (``cells/lifecycle``).

The events fire in the thread that runs the cell (the main shell or a subshell), which
is the thread whose jobs must carry the tags.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

import IPython

from .. import job_descriptions, job_tags
from ..backends.driver import raised_by_a_gone_driver
from ..sessions.registry import ManagedSession

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..app import SparkSessionsApp

log = logging.getLogger(__name__)

#: IPython >= 9.8 counts a cell (one stored in history) before ``pre_run_cell`` fires;
#: earlier releases, which include every IPython for Python 3.10, when the cell ends.
COUNTED_BEFORE_PRE_RUN_CELL = tuple(IPython.version_info[:2]) >= (9, 8)


class CellJobTagging:
    """The first step of a cell's life (``cells/lifecycle``)."""

    def __init__(self, shell: InteractiveShell, app: SparkSessionsApp) -> None:
        self.shell = shell
        self.registry = app.registry
        self.board = app.board
        self.tagger = app.tagger
        # Per thread: the running cell's count and source, and the (session,
        # count) whose tags it pushed, if any.
        self._pushed = threading.local()

    def pre_run_cell(self, info: Any) -> None:
        """Tag the jobs of the cell about to run, if ``spark`` is a managed session."""
        self._untag_ended_cell()  # if the event loop has not yet
        local = self._pushed
        local.value = None
        local.count = count_of_cell(self.shell, info)
        local.source = getattr(info, "raw_cell", "")  # described by the board, if shown
        if not len(self.registry):
            return  # nothing managed: no cost on cells
        managed = self.registry.find(self.shell.user_ns.get("spark"))
        if managed is not None:
            self._push(managed)

    def current_count(self) -> int:
        """The execution count of the cell this thread is running (as frontends show it)."""
        count: int | None = getattr(self._pushed, "count", None)
        return count if count is not None else self.shell.execution_count

    def retag(self, name: str) -> None:
        """``%spark_session use NAME`` ran inside a cell: the rest of the cell's jobs
        belong to NAME. Not inside a ``%%spark_session`` body, whose tags are its own."""
        pushed: tuple[str, int] | None = getattr(self._pushed, "value", None)
        own = job_tags.cell_tags(*pushed) if pushed else ()
        if self.tagger.current_tags() != own:
            return
        if pushed:
            self._pop()
        self._push(self.registry.get(name))

    def _push(self, managed: ManagedSession) -> None:
        name, count = managed.name, self.current_count()
        try:
            self.tagger.push(managed.backend, name, count)
        except Exception:  # a stopped context must not break every cell
            log.warning("could not tag the jobs of this cell for session %r", name)
            return
        self._pushed.value = (name, count)
        self.board.cell_started(name, count, source=getattr(self._pushed, "source", ""))

    def _pop(self, after_reply: bool = False) -> None:
        # The group ends at once; the tags go now, or (``after_reply``) from the
        # kernel's event loop once the cell's reply is sent, before the next cell anyway.
        pushed: tuple[str, int] | None = getattr(self._pushed, "value", None)
        if not pushed:
            return
        self._pushed.value = None
        self.board.cell_finished(*pushed)
        self._pushed.untag_pending = True
        loop = _running_loop() if after_reply else None
        if loop is None:
            self._untag_ended_cell()
        else:
            loop.call_soon(self._untag_ended_cell)

    def post_run_cell(self, result: Any) -> None:
        """Remove this cell's tags, whether it succeeded or raised: the cell's group ends
        now; its tags go once its reply is sent (the JVM round trip is then not part of
        the cell's)."""
        self._pushed.count = None
        self._pop(after_reply=True)

    def _untag_ended_cell(self) -> None:
        if not getattr(self._pushed, "untag_pending", False):
            return
        self._pushed.untag_pending = False
        try:
            self.tagger.pop()
        except Exception as exc:
            # The driver died during the cell: its tags died with it, and the cell (or
            # the next one) says so in one line; anything else is worth a warning.
            level = logging.DEBUG if raised_by_a_gone_driver(exc) else logging.WARNING
            log.log(level, "could not remove this cell's Spark job tags (%s)", type(exc).__name__)


def count_of_cell(shell: InteractiveShell, info: Any) -> int:
    """In ``pre_run_cell``: the execution count of the cell about to run, as frontends
    show it (``In [N]``): the count its job groups carry."""
    counted = COUNTED_BEFORE_PRE_RUN_CELL and getattr(info, "store_history", True)
    count: int = shell.execution_count - (1 if counted else 0)
    return count


def _running_loop() -> asyncio.AbstractEventLoop | None:
    # The kernel's loop, in the thread that runs the cell (a subshell has its own).
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def first_line(source: str | None) -> str:
    """How the board describes a group: the first line of the cell that is code doing
    something (``job_descriptions.first_code_line``)."""
    return job_descriptions.first_code_line(source)

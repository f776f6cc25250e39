"""Tags every cell's Spark jobs with the session bound to ``spark`` and the cell's
execution count (see ``job_tags``), through IPython's pre/post_run_cell events.

The events fire in the thread that runs the cell (the main shell or a subshell), which
is the thread whose jobs must carry the tags.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from .registry import SessionRegistry

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)


class CellJobTagging:
    """The pre/post_run_cell pair; register with ``register``, remove with ``unregister``."""

    def __init__(self, shell: InteractiveShell, registry: SessionRegistry) -> None:
        self.shell = shell
        self.registry = registry
        # (session, execution count) of the group this thread's current cell pushed.
        self._pushed = threading.local()

    def register(self) -> None:
        """Start tagging cells."""
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)

    def unregister(self) -> None:
        """Stop tagging cells."""
        self.shell.events.unregister("pre_run_cell", self.pre_run_cell)
        self.shell.events.unregister("post_run_cell", self.post_run_cell)

    def pre_run_cell(self, info: Any) -> None:
        """Tag the jobs of the cell about to run, if ``spark`` is a managed session."""
        self._pushed.value = None
        if not len(self.registry):
            return  # nothing managed: no cost on cells
        managed = self.registry.find(self.shell.user_ns.get("spark"))
        if managed is None:
            return
        try:
            # IPython increments execution_count after the cell, so this is its number.
            count = self.shell.execution_count
            self.registry.tagger.push(managed.sc, managed.name, count)
            self._pushed.value = (managed.name, count)
            self.registry.board.cell_started(managed.name, count, first_line(info.raw_cell))
        except Exception:  # a stopped context must not break every cell
            log.warning("could not tag the jobs of this cell for session %r", managed.name)

    def post_run_cell(self, result: Any) -> None:
        """Remove this cell's tags, whether it succeeded or raised."""
        pushed: tuple[str, int] | None = getattr(self._pushed, "value", None)
        if not pushed:
            return
        self._pushed.value = None
        self.registry.board.cell_finished(*pushed)
        try:
            self.registry.tagger.pop()
        except Exception:
            log.warning("could not remove this cell's Spark job tags")


def first_line(source: str | None) -> str:
    """The first non-blank line of a cell, shortened: how the board describes a group."""
    for line in (source or "").splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= 80 else line[:79] + "…"
    return ""

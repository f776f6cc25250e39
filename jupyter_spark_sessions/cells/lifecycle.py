"""A cell's life, in one place: the one pair of IPython ``pre_run_cell`` /
``post_run_cell`` callbacks of the extension, running its steps in the order stated
here.

Before the cell runs:
  1. tagging (``tagging``) counts the cell and pushes the bound session's tags on
     the cell's thread: the steps after it read the count, and a job the cell starts
     must already carry the tags;
  2. the Interrupt scope (``interrupt``) takes SIGINT for the cell (main thread only);
  3. the in-cell progress view (``progress``) opens for the counted cell.
After it ran, the same order: the group ends with the cell (its untag goes after the
reply), then SIGINT is handed back and a cancelled cell's error told in one line, then
the view settles on its summary.

A step that raises does not keep the next ones from running: each is reported as
IPython reports a failing callback (its traceback in the cell's output).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)


class CellStep(Protocol):
    """One part of a cell's life."""

    def pre_run_cell(self, info: Any) -> None: ...

    def post_run_cell(self, result: Any) -> None: ...


class CellLifecycle:
    """Registers once with the shell's events and runs ``steps`` in their order."""

    def __init__(
        self,
        shell: InteractiveShell,
        steps: Sequence[CellStep],
        on_register: Callable[[], None] = lambda: None,
        on_unregister: Callable[[], None] = lambda: None,
    ) -> None:
        self.shell = shell
        self.steps = tuple(steps)
        self._on_register = on_register
        self._on_unregister = on_unregister

    def register(self) -> None:
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        self._on_register()

    def unregister(self) -> None:
        self.shell.events.unregister("pre_run_cell", self.pre_run_cell)
        self.shell.events.unregister("post_run_cell", self.post_run_cell)
        self._on_unregister()

    def pre_run_cell(self, info: Any) -> None:
        for step in self.steps:
            self._run(step.pre_run_cell, info)

    def post_run_cell(self, result: Any) -> None:
        for step in self.steps:
            self._run(step.post_run_cell, result)

    def _run(self, callback: Callable[[Any], None], argument: Any) -> None:
        try:
            callback(argument)
        except (Exception, KeyboardInterrupt):  # as IPython's EventManager does
            print(f"Error in callback {callback} (for the cell's lifecycle):")
            self.shell.showtraceback()

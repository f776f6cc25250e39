"""The cell's lifecycle runs its steps in its stated order on IPython's real events,
and one failing step does not keep the others from running."""

from __future__ import annotations

from typing import Any

from IPython.core.events import EventManager, available_events

from jupyter_spark_sessions.cells.lifecycle import CellLifecycle


class Shell:
    def __init__(self) -> None:
        self.events = EventManager(self, available_events)
        self.tracebacks = 0

    def showtraceback(self) -> None:
        self.tracebacks += 1


class Step:
    def __init__(self, name: str, calls: list[str], fails: bool = False) -> None:
        self.name, self.calls, self.fails = name, calls, fails

    def pre_run_cell(self, info: Any) -> None:
        self.calls.append(f"pre {self.name}")
        if self.fails:
            raise RuntimeError("broken step")

    def post_run_cell(self, result: Any) -> None:
        self.calls.append(f"post {self.name}")


def test_steps_run_in_order_before_and_after_the_cell_and_a_failure_is_shown() -> None:
    shell, calls, subscribed = Shell(), [], []
    steps = [Step("tagging", calls), Step("interrupt", calls, fails=True), Step("view", calls)]
    lifecycle = CellLifecycle(
        shell,  # type: ignore[arg-type]
        steps,
        on_register=lambda: subscribed.append(True),
        on_unregister=lambda: subscribed.append(False),
    )
    lifecycle.register()
    shell.events.trigger("pre_run_cell", object())
    shell.events.trigger("post_run_cell", object())
    assert calls == [
        "pre tagging",
        "pre interrupt",
        "pre view",
        "post tagging",
        "post interrupt",
        "post view",
    ]
    assert shell.tracebacks == 1
    lifecycle.unregister()
    shell.events.trigger("pre_run_cell", object())
    assert len(calls) == 6 and subscribed == [True, False]

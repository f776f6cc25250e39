"""A ``SessionBackend`` without Spark, recording what the package asked of it: proof
that the registry, the board and the tagger need nothing but the backend interface."""

from __future__ import annotations

import copy
import itertools
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jupyter_spark_sessions.backends.base import BackendKind, OperationSink

_ids = itertools.count(1)


class FakeJobFeed:
    """Job data as Spark's status store gives it, set by the test."""

    def __init__(self) -> None:
        self.jobs: dict[int, dict[str, Any]] = {}
        #: Stage id -> jss.StageFigures' data; executor id -> task slots.
        self.stages: dict[int, dict[str, Any]] = {}
        self.slots: dict[str, int] = {}

    def poll(self, also: Iterable[int]) -> list[dict[str, Any]]:
        # New dicts each poll, as a real feed's (JobFeed.poll).
        return copy.deepcopy(list(self.jobs.values()))

    def running_stages(self, stage_ids: Iterable[int]) -> list[dict[str, Any]]:
        return []

    def stage_figures(self) -> dict[int, dict[str, Any]]:
        return self.stages

    def executor_slots(self) -> dict[str, int]:
        return self.slots


class FakeBackend:
    kind: BackendKind = "classic"
    on_kernel_context = True

    def __init__(self, name: str, feed: FakeJobFeed | None = None) -> None:
        self.session = object()
        self.session_id = f"fake-{next(_ids):04d}-0000"
        self.spark_session_tag = f"spark-session-{name}"
        self.feed = feed
        self.calls: list[tuple[Any, ...]] = []
        self.running = 0
        self.sink: OperationSink | None = None

    def where(self) -> str:
        return "fake://master"

    def location(self) -> str:
        return self.where()

    def worker_python(self) -> tuple[bool, str]:
        return True, sys.executable

    def scheduling(self) -> str:
        return "FIFO"

    def share(self) -> str:
        return ""

    def slots(self) -> int:
        return 2

    def require_usable(self, name: str) -> None:
        self.calls.append(("require_usable", name))

    def ui_url(self) -> str:
        return ""

    def ui_note(self) -> str:
        return ""

    def ui_protected(self) -> bool:
        return False

    def operations_page(self) -> str:
        return ""

    def problem(self) -> str:
        return ""

    def explain(self, error: BaseException, bound: bool) -> str:
        return ""

    def running_jobs(self) -> int:
        return self.running

    def job_feed(self) -> FakeJobFeed | None:
        return self.feed

    def stage_source(self) -> None:
        return None

    def watch(self, sink: OperationSink) -> None:
        self.sink = sink

    def cancel_jobs(self, refs: tuple[int | str, ...]) -> None:
        self.calls.append(("cancel", "jobs", refs))

    def cancel_session(self) -> None:
        self.calls.append(("cancel", "session"))

    def cancel_tag(self, tag: str) -> None:
        self.calls.append(("cancel", "tag", tag))

    def tag_thread(self, tags: tuple[str, ...]) -> tuple[str, ...]:
        self.calls.append(("tag", tags))
        return tags

    def untag_thread(self, applied: tuple[str, ...]) -> None:
        self.calls.append(("untag", applied))

    def add_artifact(self, remote_path: str, staged: Path, fragment: str | None) -> None:
        self.calls.append(("add_artifact", remote_path, fragment))
        staged.unlink()  # Spark moves the staged copy into its own folder

    def release(self, quick: bool = False) -> None:
        self.calls.append(("release", quick))

    def stopping(self) -> None:
        self.calls.append(("stopping",))

    def forget(self) -> None:
        self.calls.append(("forget",))

    def called(self, what: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == what]

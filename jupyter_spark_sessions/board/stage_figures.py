"""What happened inside a stage, as the driver's ``jss.StageFigures`` listener reports
it (java/jss/StageFigures.java): counts, bytes, spill, task durations (median and
slowest) and each executor's share. Pure data and parsing, testable without Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends.spark_error_reading import failure_line, names_a_cancel
from .snapshot import TaskCounts

#: A stage's status in the views' words (a stage a job's cancel ended is "cancelled",
#: though Spark says FAILED).
ACTIVE, COMPLETE, FAILED, CANCELLED = "active", "complete", "failed", "cancelled"


@dataclass(frozen=True)
class ExecutorShare:
    """One executor's part of a stage: its running tasks now, its ended tasks and their
    time."""

    id: str
    running: int
    ended: int
    task_seconds: float


@dataclass(frozen=True)
class StageFigures:
    """One stage attempt (the latest of its stage)."""

    id: int
    attempt: int
    name: str  # Spark's call site: "count at In [4] line 2"
    status: str  # ACTIVE, COMPLETE, FAILED or CANCELLED
    tasks: TaskCounts
    submitted_at: float | None  # epoch seconds
    completed_at: float | None
    input_bytes: int = 0
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0
    memory_spilled_bytes: int = 0
    disk_spilled_bytes: int = 0
    run_seconds: float = 0.0  # executors' run time of its tasks, summed
    gc_seconds: float = 0.0
    median_task_seconds: float | None = None  # of its ended tasks (None: none yet)
    max_task_seconds: float | None = None
    slowest_executor: str = ""
    #: Its ended tasks that took at least about half as long as the slowest.
    slow_tasks: int = 0
    executors: tuple[ExecutorShare, ...] = ()
    failure: str = ""  # why the stage failed
    first_task_failure: str = ""  # why its first failed task failed

    def elapsed(self, now: float) -> float:
        """Seconds from its start to its end (or ``now``)."""
        if self.submitted_at is None:
            return 0.0
        return max(0.0, (self.completed_at or now) - self.submitted_at)

    @property
    def running(self) -> bool:
        return self.status == ACTIVE


def _seconds(ms: Any) -> float | None:
    return None if ms is None or int(ms) < 0 else int(ms) / 1000


def parse_stage_figures(data: Mapping[str, Any]) -> StageFigures:
    """A ``StageFigures`` from one entry of ``jss.BoardReader``'s ``stageFigures``."""
    active = int(data.get("numActiveTasks", 0))
    executors = tuple(
        ExecutorShare(str(eid), int(row[0]), int(row[1]), int(row[2]) / 1000)
        for eid, row in sorted(dict(data.get("executors", {})).items())
    )
    status = str(data.get("status", "ACTIVE")).lower()
    reason = str(data.get("failureReason", ""))
    if status == FAILED and names_a_cancel(reason):
        status = CANCELLED
    return StageFigures(
        id=int(data["stageId"]),
        attempt=int(data.get("attemptId", 0)),
        name=str(data.get("name", "")),
        status=status,
        tasks=TaskCounts(
            total=int(data.get("numTasks", 0)),
            active=active,
            completed=int(data.get("numCompleteTasks", 0)),
            failed=int(data.get("numFailedTasks", 0)),
            killed=int(data.get("numKilledTasks", 0)),
        ),
        submitted_at=_seconds(data.get("submissionTime")),
        completed_at=_seconds(data.get("completionTime")),
        input_bytes=int(data.get("inputBytes", 0)),
        shuffle_read_bytes=int(data.get("shuffleReadBytes", 0)),
        shuffle_write_bytes=int(data.get("shuffleWriteBytes", 0)),
        memory_spilled_bytes=int(data.get("memoryBytesSpilled", 0)),
        disk_spilled_bytes=int(data.get("diskBytesSpilled", 0)),
        run_seconds=int(data.get("executorRunTime", 0)) / 1000,
        gc_seconds=int(data.get("jvmGcTime", 0)) / 1000,
        median_task_seconds=_seconds(data.get("medianTaskMs")),
        max_task_seconds=_seconds(data.get("maxTaskMs")),
        slowest_executor=str(data.get("slowestExecutor", "")),
        slow_tasks=int(data.get("slowTasks", 0)),
        executors=executors,
        # Their line: a Python exception's own (``RuntimeError: ...``), else Spark's first.
        failure=failure_line(reason),
        first_task_failure=failure_line(str(data.get("firstTaskFailure", ""))),
    )

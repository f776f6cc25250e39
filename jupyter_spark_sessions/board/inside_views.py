"""What a view shows inside a job group: its stage rows, its slot chart and its
findings. Pure data (the protocol's ``GroupInside``, ``StageRow``, ``SlotChart``), made
by ``group_inside`` and carried by each ``GroupView``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StageRow:
    """One stage as the views show it."""

    id: int
    attempt: int
    job: int
    name: str
    status: str  # active, complete, failed
    total: int
    done: int
    active: int
    failed: int
    killed: int
    elapsed: float  # seconds
    input_bytes: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    memory_spilled_bytes: int
    disk_spilled_bytes: int
    median_task_seconds: float | None
    max_task_seconds: float | None


@dataclass(frozen=True)
class SlotChart:
    """Running tasks of the group on each executor, sampled at each poll, against the
    executors' task slots; with where its stages started."""

    start: float  # epoch seconds
    end: float
    executors: tuple[str, ...]
    slots: tuple[int, ...]  # per executor
    #: (epoch seconds, running tasks per executor).
    samples: tuple[tuple[float, tuple[float, ...]], ...]
    #: (epoch seconds, stage id) of each stage's start.
    stage_marks: tuple[tuple[float, int], ...]


@dataclass(frozen=True)
class GroupInside:
    """What a view shows inside a group."""

    stages: tuple[StageRow, ...]
    #: Stages not shown as rows (more than MAX_ROWS): how many.
    more_stages: int
    #: Stages of its ended jobs Spark skipped (their output was there already).
    skipped_stages: int
    #: Stages whose figures were gone before the board read them (Spark keeps a
    #: bounded number of ended stages; a group keeps what it read while it runs).
    unknown_stages: int
    chart: SlotChart | None
    findings: tuple[str, ...]

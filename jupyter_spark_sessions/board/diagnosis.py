"""One-line findings about a group's stages, from Spark's own figures: skew, a
straggling executor, spill to disk, too few partitions, failed and retried tasks, time
lost to GC. Each line says what was seen, in figures, and the usual remedy; a healthy
stage gets none. Pure: ``diagnose`` reads ``StageFigures`` and the task slots.

The thresholds are settings (``SparkSessionsConfig.diagnosis_*``, documented in
docs/jobs.md, "Inside a job").
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..sizes import size_text
from .stage_figures import CANCELLED, FAILED, StageFigures

#: Lines a group shows at most.
MAX_FINDINGS = 5


@dataclass(frozen=True)
class Thresholds:
    """When a figure is worth a line (the defaults are the settings')."""

    #: A stage shorter than this gets no line about time (skew, partitions, GC,
    #: stragglers): in a short stage they cost little.
    min_seconds: float = 3.0
    #: Skew: the slowest task took at least this many times the median...
    skew_ratio: float = 5.0
    #: ...in a stage of at least this many tasks.
    skew_min_tasks: int = 8
    #: GC: at least this share of the tasks' run time.
    gc_share: float = 0.25
    #: A straggling executor: its tasks took at least this many times as long on
    #: average as the other executors'.
    straggler_ratio: float = 3.0


def thresholds_of(config: Any) -> Thresholds:
    """The thresholds a ``SparkSessionsConfig`` sets."""
    return Thresholds(
        min_seconds=config.diagnosis_min_seconds,
        skew_ratio=config.diagnosis_skew_ratio,
        skew_min_tasks=config.diagnosis_skew_min_tasks,
        gc_share=config.diagnosis_gc_share,
        straggler_ratio=config.diagnosis_straggler_ratio,
    )


def diagnose(
    stages: Iterable[StageFigures], slots: int, now: float, thresholds: Thresholds
) -> tuple[str, ...]:
    """The findings about ``stages`` (one group's), in stage order; ``slots``: the task
    slots of the context (0: unknown)."""
    found: list[str] = []
    for stage in sorted(stages, key=lambda s: s.id):
        if stage.status != CANCELLED:  # cut short by a cancel: its figures say nothing
            found += _stage_findings(stage, slots, now, thresholds)
    return tuple(found[:MAX_FINDINGS])


def _stage_findings(stage: StageFigures, slots: int, now: float, limits: Thresholds) -> list[str]:
    lines = []
    head = f"stage {stage.id}" + (f" ({stage.name})" if stage.name else "")
    elapsed = stage.elapsed(now)
    long_enough = elapsed >= limits.min_seconds
    slowest, median = stage.max_task_seconds, stage.median_task_seconds
    skewed = (
        long_enough
        and slowest is not None
        and median is not None
        and stage.tasks.total >= limits.skew_min_tasks
        and slowest >= limits.skew_ratio * max(median, 0.001)
        and slowest >= 0.5 * elapsed
        # One or a few slow tasks: a whole wave of them (one per slot) is each slot's
        # first task starting its Python worker on a busy machine, not a skewed key.
        and stage.slow_tasks < max(slots, 2)
    )
    if skewed:
        assert slowest is not None and median is not None
        lines.append(
            f"{head}: its slowest task of {stage.tasks.total:,} ran {_s(slowest)}, "
            f"median {_s(median)}: skewed keys; salt them, or let AQE split skewed joins"
        )
    straggler = None if skewed or not long_enough else _straggler(stage, limits)
    if straggler:
        lines.append(f"{head}: {straggler}")
    if stage.disk_spilled_bytes > 0:
        lines.append(
            f"{head}: spilled {size_text(stage.disk_spilled_bytes)} to disk "
            f"({size_text(stage.memory_spilled_bytes)} in memory): too little memory per task; "
            "more shuffle partitions or more executor memory"
        )
    if long_enough and slots and stage.tasks.total * 2 <= slots:
        tasks = f"{stage.tasks.total} task" + ("" if stage.tasks.total == 1 else "s")
        lines.append(
            f"{head}: {tasks} for {slots} task slots over {_s(elapsed)}: too few partitions; "
            f"repartition({slots}) or smaller input splits"
        )
    if stage.tasks.failed and stage.status != FAILED:
        failures = f"{stage.tasks.failed} task" + (
            " failed" if stage.tasks.failed == 1 else "s failed"
        )
        why = f" ({stage.first_task_failure})" if stage.first_task_failure else ""
        lines.append(f"{head}: {failures} and ran again{why}: see the executors' logs")
    if stage.attempt > 0:
        lines.append(
            f"{head} ran again (attempt {stage.attempt + 1}): output of an earlier stage was "
            "lost (a lost executor, or a failed shuffle fetch)"
        )
    run = stage.run_seconds
    if run >= limits.min_seconds and stage.gc_seconds >= limits.gc_share * run:
        lines.append(
            f"{head}: GC took {stage.gc_seconds / run:.0%} of the tasks' time "
            f"({_s(stage.gc_seconds)} of {_s(run)}): more executor memory, or less cached"
        )
    return lines


def _straggler(stage: StageFigures, limits: Thresholds) -> str:
    means = {e.id: e.task_seconds / e.ended for e in stage.executors if e.ended >= 2}
    if len(means) < 2:
        return ""
    slowest = max(means, key=lambda e: means[e])
    others = statistics.median(m for e, m in means.items() if e != slowest)
    if means[slowest] < limits.straggler_ratio * max(others, 0.001):
        return ""
    return (
        f"executor {slowest}'s tasks took {_s(means[slowest])} on average, the others' "
        f"{_s(others)}: a slow or busy machine; spark.speculation=true reruns its tasks"
    )


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 1 else f"{seconds:.1f} s"

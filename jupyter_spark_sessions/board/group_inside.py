"""Inside a job group: its stages as rows, its running tasks against the task slots
over its life (the slot chart), and what the diagnosis found. Pure data and functions;
the board (``job_board``) feeds them each poll, every view shows them.

Bounded at any scale: a group shows at most ``MAX_ROWS`` stage rows (the running and
failed ones first, then the longest), and its chart at most ``MAX_SAMPLES`` samples
(neighbours merged as it grows): what reaches a view depends on neither the number of
tasks nor of stages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from .diagnosis import Thresholds, diagnose
from .inside_views import GroupInside, SlotChart, StageRow
from .snapshot import JobView
from .stage_figures import ACTIVE, FAILED, StageFigures

#: Stage rows a group shows at most.
MAX_ROWS = 10
#: Samples a chart keeps at most (about two a second for a minute, then coarser).
MAX_SAMPLES = 120
#: While nothing changes, a sample this often: the chart of a long task moves on.
STEADY_SAMPLE_SECONDS = 5.0
#: Stage start marks a chart keeps at most (the first ones).
MAX_MARKS = 40


@dataclass(frozen=True)
class StagesRead:
    """The stages' figures (by stage id) and the executors' task slots (by executor
    id) of the board's last read."""

    figures: Mapping[int, StageFigures] = field(default_factory=dict)
    slots: Mapping[str, int] = field(default_factory=dict)
    #: Session name -> the read of its Connect server (whose stage ids are its own).
    servers: Mapping[str, StagesRead] = field(default_factory=dict)

    def of_session(self, name: str) -> StagesRead:
        """The read that has session ``name``'s stages."""
        return self.servers.get(name, self)


@dataclass
class SlotSampler:
    """A group's chart as it grows: one sample per poll while it runs."""

    executors: list[str] = field(default_factory=list)
    slots: dict[str, int] = field(default_factory=dict)
    samples: list[tuple[float, tuple[float, ...]]] = field(default_factory=list)
    #: Changes with each sample: a group view is remade only when it moved.
    version: int = 0

    def sample(self, now: float, running: Iterable[StageFigures], slots: Mapping[str, int]) -> None:
        """Add a sample: ``running`` stages' tasks on each executor (``slots``: each
        executor's task slots now)."""
        per_executor: dict[str, int] = {}
        for stage in running:
            for share in stage.executors:
                per_executor[share.id] = per_executor.get(share.id, 0) + share.running
        for executor, count in slots.items():
            if count > 0:
                self.slots[executor] = count
        for executor in sorted(set(per_executor) | set(self.slots)):
            if executor not in self.executors:
                self.executors.append(executor)
        counts = tuple(float(per_executor.get(e, 0)) for e in self.executors)
        last = self.samples[-1] if self.samples else None
        if last is not None and last[1] == counts and now - last[0] < STEADY_SAMPLE_SECONDS:
            # Unchanged: no sample (each holds until the next one), so a long task moves
            # the views only every few seconds, not at each poll.
            return
        self.samples.append((now, counts))
        if len(self.samples) > MAX_SAMPLES:
            self.samples = _halved(self.samples)
        self.version += 1

    def chart(
        self, start: float | None, end: float, stages: Iterable[StageFigures]
    ) -> SlotChart | None:
        if not self.samples:
            return None
        width = len(self.executors)
        marks = sorted((s.submitted_at, s.id) for s in stages if s.submitted_at is not None)
        return SlotChart(
            start=min(start or self.samples[0][0], self.samples[0][0]),
            end=max(end, self.samples[-1][0]),
            executors=tuple(self.executors),
            slots=tuple(self.slots.get(e, 0) for e in self.executors),
            samples=tuple(
                (t, counts + (0.0,) * (width - len(counts))) for t, counts in self.samples
            ),
            stage_marks=tuple(marks[:MAX_MARKS]),
        )


def _halved(
    samples: list[tuple[float, tuple[float, ...]]],
) -> list[tuple[float, tuple[float, ...]]]:
    """Each two neighbours as one, from the first one's time (their mean): half the
    samples over the same time."""
    merged = []
    for first, second in zip(samples[::2], samples[1::2], strict=False):
        width = max(len(first[1]), len(second[1]))
        a = first[1] + (0.0,) * (width - len(first[1]))
        b = second[1] + (0.0,) * (width - len(second[1]))
        merged.append((first[0], tuple(round((x + y) / 2, 2) for x, y in zip(a, b, strict=True))))
    if len(samples) % 2:
        merged.append(samples[-1])
    return merged


def stage_rows(
    figures: Iterable[tuple[int, StageFigures]], now: float
) -> tuple[tuple[StageRow, ...], int]:
    """The rows shown (``MAX_ROWS`` at most: running and failed stages first, then the
    longest), in stage order, and how many were left out. ``figures``: (job id, stage)."""
    chosen = list(figures)
    more = max(0, len(chosen) - MAX_ROWS)
    if more:

        def weight(item: tuple[int, StageFigures]) -> tuple[bool, float]:
            stage = item[1]
            return (stage.status in (ACTIVE, FAILED), stage.elapsed(now))

        chosen = sorted(chosen, key=weight, reverse=True)[:MAX_ROWS]
    chosen.sort(key=lambda item: item[1].id)
    return tuple(_row(job, stage, now) for job, stage in chosen), more


def _row(job: int, stage: StageFigures, now: float) -> StageRow:
    return StageRow(
        id=stage.id,
        attempt=stage.attempt,
        job=job,
        name=stage.name,
        status=stage.status,
        total=stage.tasks.total,
        done=stage.tasks.completed,
        # A stage that ended runs nothing, whatever task Spark is still killing.
        active=stage.tasks.active if stage.running else 0,
        failed=stage.tasks.failed,
        killed=stage.tasks.killed,
        elapsed=round(stage.elapsed(now), 1),
        input_bytes=stage.input_bytes,
        shuffle_read_bytes=stage.shuffle_read_bytes,
        shuffle_write_bytes=stage.shuffle_write_bytes,
        memory_spilled_bytes=stage.memory_spilled_bytes,
        disk_spilled_bytes=stage.disk_spilled_bytes,
        median_task_seconds=_rounded(stage.median_task_seconds),
        max_task_seconds=_rounded(stage.max_task_seconds),
    )


def _rounded(seconds: float | None) -> float | None:
    if seconds is None:
        return None
    return round(seconds, 3 if seconds < 1 else 1)


def inside_of(
    jobs: Iterable[JobView],
    figures: Mapping[int, StageFigures],
    sampler: SlotSampler,
    span: tuple[float | None, float],
    thresholds: Thresholds,
) -> GroupInside | None:
    """What a group of ``jobs`` shows inside (None when nothing is known of it, as for
    Spark Connect operations): ``figures`` by stage id, ``span`` its start and end (or
    now)."""
    now = span[1]
    known: list[tuple[int, StageFigures]] = []
    skipped = unknown = 0
    for job in jobs:
        missing = 0
        for stage_id in job.stage_ids:
            stage = figures.get(stage_id)
            if stage is not None:
                if not stage.name:  # a Connect stage: named after its operation's call
                    stage = replace(stage, name=job.name)
                known.append((job.id, stage))
            else:
                missing += 1
        if not job.running:  # an ended job's missing stages: skipped, or not kept
            skipped += min(missing, job.skipped_stages)
            unknown += max(0, missing - job.skipped_stages)
    if not known and not sampler.samples:
        return None
    rows, more = stage_rows(known, now)
    stages = [stage for _, stage in known]
    slots = sum(sampler.slots.values())
    return GroupInside(
        stages=rows,
        more_stages=more,
        skipped_stages=skipped,
        unknown_stages=unknown,
        chart=sampler.chart(span[0], now, stages),
        findings=diagnose(stages, slots, now, thresholds),
    )

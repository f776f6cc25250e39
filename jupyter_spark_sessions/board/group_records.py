"""What the board remembers of each managed cell and job group between polls, and the
``GroupView`` each group shows (made again only when what it shows changed).

``job_board.JobBoard`` keeps these records under its lock; nothing here locks.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import job_descriptions
from .diagnosis import Thresholds
from .group_inside import SlotSampler, StagesRead, inside_of
from .inside_views import GroupInside
from .snapshot import (
    FINAL_STATES,
    GroupView,
    JobView,
    TaskCounts,
    group_id_of,
    group_state,
    stated_jobs,
)
from .stage_figures import StageFigures

if TYPE_CHECKING:
    from ..backends.base import JobRef


@dataclass
class CellRecord:
    """A managed cell execution (its jobs may run in several sessions)."""

    #: Given (``SessionRegistry.running_in``), else the cell's first line of code.
    description: str = ""
    depth: int = 0  # > 0 while it runs (a %%spark_session body nests in its cell)
    #: The cell's code, parsed (``job_descriptions.describe_cell``: ~1 ms) only once a
    #: group of the cell has jobs, on the producer's thread: not on every cell's.
    source: str | None = None
    code: job_descriptions.CellCode | None = None
    #: What ``job_descriptions.job_line`` made of each job name seen: the same call
    #: site's jobs (a query's several jobs, a loop's) are looked up once.
    job_lines: dict[str, str] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.depth > 0

    def described(self) -> str:
        """The cell's first line of code (or the description it was given)."""
        if self.source is not None:
            self.code = job_descriptions.describe_cell(self.source)
            self.description = self.description or self.code.first_line
            self.source = None
        return self.description

    def line_of_first_job(self, jobs: tuple[JobView, ...], count: int) -> str:
        """The code of this cell (``In [count]``) that started the first of ``jobs``
        naming a line of it; "" when none does (or the cell's code is not known)."""
        self.described()
        if self.code is None:
            return ""
        for job in jobs:
            line = self.job_lines.get(job.name)
            if line is None:
                line = job_descriptions.job_line(self.code, job.name, count)
                if line or " at In [" in job.name:  # not one entry per Connect operation
                    self.job_lines[job.name] = line
            if line:
                return line
        return ""


@dataclass
class GroupRecord:
    """What the board remembers of one group between polls: the jobs of one session
    started by one cell (``count``), or by none (None: its background group)."""

    session: str
    count: int | None
    job_ids: list[int] = field(default_factory=list)
    operation_ids: list[str] = field(default_factory=list)
    cancel_requested_at: float | None = None
    cancel_source: str | None = None  # where the user asked (CancelSource, "stop")
    cancel_job_ids: frozenset[int] = frozenset()
    #: Jobs a cancel was sent for (each is sent once; jobs seen later get theirs).
    cancel_sent: set[JobRef] = field(default_factory=set)
    #: The last view made of it and what it was made from: most groups do not change
    #: between two polls, and remaking 1,000 views each poll cost ~25 ms.
    view: tuple[tuple[Any, ...], GroupView] | None = None
    #: Its description once known: the code that ran its first job naming a line of
    #: its cell. Kept for the group's life: its title does not change under the cursor
    #: as later jobs run (each job's own line is its name).
    job_line: str = ""
    #: Its running tasks per executor, sampled at each poll while it runs.
    sampler: SlotSampler = field(default_factory=SlotSampler)
    #: What it shows inside and what that was made from (``inside_now``).
    inside: tuple[tuple[Any, ...], GroupInside | None] | None = None
    #: The figures of its stages as last read: Spark keeps a bounded number of ended
    #: stages, and a group of many stages must not lose its first ones before it ends.
    seen: dict[int, StageFigures] = field(default_factory=dict)
    #: Its inside once it ended (made from complete figures; ``seen`` is then let go),
    #: with the jobs it was made of.
    ended_inside: tuple[tuple[JobView, ...], GroupInside | None] | None = None

    def sample_slots(self, now: float, jobs: Iterable[JobView], read: StagesRead) -> None:
        """A chart sample while some of ``jobs`` (its jobs) run, from ``read``."""
        running = [j for j in jobs if j.running]
        if running:
            stages = (read.figures.get(s) for j in running for s in j.stage_ids)
            self.sampler.sample(now, [s for s in stages if s is not None and s.running], read.slots)

    def inside_now(
        self,
        jobs: tuple[JobView, ...],
        figures: Mapping[int, StageFigures],
        thresholds: Thresholds,
        cell_running: bool,
    ) -> GroupInside | None:
        """What it shows inside: remade when its jobs, their stages' figures or its
        chart changed; once it ended (``cell_running``: its cell may start more jobs),
        what it showed last."""
        if self.ended_inside is not None and self.ended_inside[0] == jobs:
            return self.ended_inside[1]
        for job in jobs:
            for stage_id in job.stage_ids:
                stage = figures.get(stage_id)
                if stage is not None:
                    self.seen[stage_id] = stage
        known = tuple(self.seen.get(s) for j in jobs for s in j.stage_ids)
        inputs = (jobs, known, self.sampler.version)
        if self.inside is not None and (self.inside[0] == inputs or not any(known)):
            inside = self.inside[1]
        else:
            ended = [j.completed_at for j in jobs if not j.running and j.completed_at is not None]
            running = any(j.running for j in jobs)
            end = time.time() if running or not ended else max(ended)
            first = (j.submitted_at for j in jobs if j.submitted_at is not None)
            span = (min(first, default=None), end)
            inside = inside_of(jobs, self.seen, self.sampler, span, thresholds)
            self.inside = (inputs, inside)
        settled = not any(j.running for j in jobs) and not any(k and k.running for k in known)
        if settled and not cell_running:  # its picture is final: the figures can go
            self.ended_inside, self.seen, self.inside = (jobs, inside), {}, None
        return inside

    @property
    def id(self) -> str:
        return group_id_of((self.session, self.count))

    def view_of(
        self, jobs: tuple[JobView, ...], cell: CellRecord | None, inside: GroupInside | None
    ) -> GroupView:
        """The view of the group with ``jobs`` (in the order shown), its ``cell`` and
        what it shows ``inside``."""
        description = self._description(jobs, cell)
        # JobViews are immutable and replaced when Spark reports a change, so the
        # tuple compares by identity in the common case.
        inputs = (
            jobs,
            self.cancel_job_ids,
            self.cancel_requested_at,
            description,
            cell.running if cell else False,
            inside,
        )
        if self.view is not None and self.view[0] == inputs:
            return self.view[1]
        view = _make_view(self, jobs, description, cell, inside)
        self.view = (inputs, view)
        return view

    def _description(self, jobs: tuple[JobView, ...], cell: CellRecord | None) -> str:
        if cell is None:
            return _BACKGROUND_DESCRIPTION
        if not jobs or self.count is None:  # only groups with jobs are shown
            return cell.description
        if not self.job_line:
            self.job_line = cell.line_of_first_job(jobs, self.count)
        return self.job_line or cell.described()


def _make_view(
    group: GroupRecord,
    jobs: tuple[JobView, ...],
    description: str,
    cell: CellRecord | None,
    inside: GroupInside | None,
) -> GroupView:
    tasks = sum((j.tasks for j in jobs), TaskCounts())
    submitted = [j.submitted_at for j in jobs if j.submitted_at is not None]
    completed = [j.completed_at for j in jobs if j.completed_at is not None]
    state = group_state(jobs, group.cancel_job_ids, group.cancel_requested_at)
    return GroupView(
        id=group.id,
        session=group.session,
        execution_count=group.count or 0,
        description=description,
        state=state,
        cell_running=cell.running if cell else False,
        submitted_at=min(submitted) if submitted else None,
        completed_at=max(completed) if completed and state in FINAL_STATES else None,
        cancel_requested_at=group.cancel_requested_at,
        tasks=tasks,
        tasks_still_running=sum(j.tasks.active for j in jobs if not j.running),
        jobs=stated_jobs(jobs, group.cancel_job_ids, group.cancel_requested_at),
        inside=inside,
    )


#: How the board describes a session's jobs that no managed cell started.
_BACKGROUND_DESCRIPTION = "jobs started outside a cell bound to this session (threads)"

"""What the board remembers of each managed cell and job group between polls, and the
``GroupView`` each group shows (made again only when what it shows changed).

``job_board.JobBoard`` keeps these records under its lock; nothing here locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import job_descriptions
from .snapshot import (
    FINAL_STATES,
    GroupView,
    JobView,
    TaskCounts,
    group_id_of,
    group_state,
    stated_jobs,
)

if TYPE_CHECKING:
    from ..backends.base import JobRef


@dataclass
class CellRecord:
    """A managed cell execution (its jobs may run in several sessions)."""

    description: str = ""
    depth: int = 0  # > 0 while it runs (a %%spark_session body nests in its cell)
    #: The cell's code, described (``job_descriptions.first_code_line``: it parses the
    #: cell, ~1 ms) only once a group of the cell has jobs, on the producer's thread:
    #: not on every cell's.
    source: str | None = None

    @property
    def running(self) -> bool:
        return self.depth > 0

    def described(self) -> str:
        if self.source is not None:
            self.description = self.description or job_descriptions.first_code_line(self.source)
            self.source = None
        return self.description


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

    @property
    def id(self) -> str:
        return group_id_of((self.session, self.count))

    def view_of(self, jobs: tuple[JobView, ...], cell: CellRecord | None) -> GroupView:
        """The view of the group with ``jobs`` (in the order shown) and its ``cell``."""
        if cell is not None and jobs:
            cell.described()  # only groups with jobs are shown
        # JobViews are immutable and replaced when Spark reports a change, so the
        # tuple compares by identity in the common case.
        inputs = (
            jobs,
            self.cancel_job_ids,
            self.cancel_requested_at,
            cell.description if cell else None,
            cell.running if cell else False,
        )
        if self.view is not None and self.view[0] == inputs:
            return self.view[1]
        view = _make_view(self, jobs, cell)
        self.view = (inputs, view)
        return view


def _make_view(group: GroupRecord, jobs: tuple[JobView, ...], cell: CellRecord | None) -> GroupView:
    tasks = sum((j.tasks for j in jobs), TaskCounts())
    submitted = [j.submitted_at for j in jobs if j.submitted_at is not None]
    completed = [j.completed_at for j in jobs if j.completed_at is not None]
    state = group_state(jobs, group.cancel_job_ids, group.cancel_requested_at)
    return GroupView(
        id=group.id,
        session=group.session,
        execution_count=group.count or 0,
        description=cell.description if cell else _BACKGROUND_DESCRIPTION,
        state=state,
        cell_running=cell.running if cell else False,
        submitted_at=min(submitted) if submitted else None,
        completed_at=max(completed) if completed and state in FINAL_STATES else None,
        cancel_requested_at=group.cancel_requested_at,
        tasks=tasks,
        tasks_still_running=sum(j.tasks.active for j in jobs if not j.running),
        jobs=stated_jobs(jobs, group.cancel_job_ids, group.cancel_requested_at),
    )


#: How the board describes a session's jobs that no managed cell started.
_BACKGROUND_DESCRIPTION = "jobs started outside a cell bound to this session (threads)"

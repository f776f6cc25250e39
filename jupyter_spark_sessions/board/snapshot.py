"""The board's snapshot: what the views show, and the rules that derive it from Spark.

Pure data and pure functions, testable without Spark: the immutable ``BoardSnapshot``
(sessions -> job groups, one per cell execution -> jobs -> running stages, with task
counts), parsing Spark's ``JobData`` JSON, and the *observed-state* rules: a group's
state comes from what Spark reports of its jobs, never from a cancel request itself.
The protocol's ``board`` object is ``BoardSnapshot.to_dict()``
(``protocol.schema.json``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, Literal

from .. import job_tags
from ..backends.base import OperationReport
from ..backends.spark_error_reading import failure_line, names_a_cancel
from .inside_views import GroupInside

GroupState = Literal["running", "cancelling", "succeeded", "failed", "cancelled", "lost"]
FINAL_STATES = ("succeeded", "failed", "cancelled", "lost")
#: How long after a group's jobs ended a stage of it reading active is waited for
#: (the Connect server's stage reads retry for about as long: backends/server_stages).
STAGE_END_LAG_SECONDS = 6.0

#: Our status for a job whose driver (or Connect server) went away before it ended.
LOST = "LOST"
# Spark's job statuses (JobExecutionStatus) that mean the job has ended, and ours.
_ENDED = {"SUCCEEDED", "FAILED", LOST}


@dataclass(frozen=True)
class TaskCounts:
    """Task counts of a job or stage, as Spark's status store reports them."""

    total: int = 0
    active: int = 0
    completed: int = 0
    failed: int = 0
    killed: int = 0
    skipped: int = 0

    def __add__(self, other: TaskCounts) -> TaskCounts:
        return TaskCounts(*(a + b for a, b in zip(_counts(self), _counts(other), strict=True)))


def _counts(tasks: TaskCounts) -> tuple[int, ...]:
    return (
        tasks.total,
        tasks.active,
        tasks.completed,
        tasks.failed,
        tasks.killed,
        tasks.skipped,
    )


@dataclass(frozen=True)
class StageView:
    """One running stage of a job."""

    id: int
    name: str
    attempt: int
    tasks: TaskCounts


@dataclass(frozen=True)
class JobView:
    """One Spark job of a group."""

    id: int
    name: str
    status: str  # Spark's: RUNNING, SUCCEEDED, FAILED, UNKNOWN; or LOST
    submitted_at: float | None  # epoch seconds
    completed_at: float | None
    tasks: TaskCounts
    stage_ids: tuple[int, ...]
    kill_reasons: tuple[str, ...] = ()
    stages: tuple[StageView, ...] = ()
    #: Spark Connect: the operation this "job" stands for ("" for classic jobs).
    operation_id: str = ""
    #: Its state in the views' words (``JobState``): Spark's status, except that a job
    #: a cancel ended (Spark says FAILED) is "cancelled" (set by the board).
    state: str = ""
    #: It ran on a driver that has since been replaced (``restart``): the live
    #: driver's Spark UI has another job under its id, so no view links it.
    previous_driver: bool = False
    #: The first line of why it failed, as Spark says (its failed stage's reason, or
    #: the Connect operation's error); "" unless Spark reports it FAILED.
    error: str = ""
    #: Its stages Spark skipped (their output was there already).
    skipped_stages: int = 0

    def __post_init__(self) -> None:
        if not self.state:
            object.__setattr__(self, "state", _STATE_OF_STATUS.get(self.status, "running"))

    @property
    def running(self) -> bool:
        return status_is_running(self.status)


_STATE_OF_STATUS = {"SUCCEEDED": "succeeded", "FAILED": "failed", LOST: "lost"}


def status_is_running(status: str) -> bool:
    """Whether a job with this status (Spark's, or ``LOST``) has not ended."""
    return status not in _ENDED


@dataclass(frozen=True)
class GroupView:
    """The jobs of one cell execution in one session."""

    id: str
    session: str
    execution_count: int
    description: str
    state: GroupState
    cell_running: bool
    submitted_at: float | None
    completed_at: float | None
    cancel_requested_at: float | None
    tasks: TaskCounts
    #: Tasks of ended jobs still running on executors (a cancelled task's Python
    #: worker takes a moment to exit): "Spark ended the jobs" is not "slots are free".
    tasks_still_running: int
    jobs: tuple[JobView, ...]
    #: Its stages, slot chart and findings (None: nothing known inside it, as for a
    #: Spark Connect session's operations).
    inside: GroupInside | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES and not self.cell_running

    @property
    def stage_still_active(self) -> bool:
        """Whether a stage shown inside reads active though the group's jobs ended
        within ``STAGE_END_LAG_SECONDS`` (its end not read yet: a Connect server's UI
        can lag the operation's result)."""
        return (
            self.state in FINAL_STATES
            and self.completed_at is not None
            and time.time() - self.completed_at < STAGE_END_LAG_SECONDS
            and self.inside is not None
            and any(s.status == "active" for s in self.inside.stages)
        )

    @cached_property
    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the protocol's ``Group``), made once per view: the
        board reuses unchanged views from poll to poll, and so each push reuses their
        data. Never change the dict: it is shared."""
        return asdict(self)


@dataclass(frozen=True)
class FileView:
    """One file, archive or Python file added to a session."""

    name: str
    kind: str  # file | archive | pyfile
    size: int


@dataclass(frozen=True)
class SessionView:
    """A registered session, as every view shows it (`list`, `info`, panel, sidebar)."""

    name: str
    origin: str  # created | adopted
    backend: str  # classic | connect
    master: str  # the master URL, or the Connect server's address (never a token)
    session_id: str
    isolated: bool
    directory: str
    #: What keeps the session from working now ("" when nothing does): a stopped
    #: context, an unreachable Connect server.
    disconnected: str = ""
    files: tuple[FileView, ...] = ()
    #: Its jobs (Connect: operations) that have not ended, in any group or none.
    running_jobs: int = 0
    #: The driver's Spark UI ("" when it is off, or the server's own: Connect).
    ui_url: str = ""
    #: Why it has no UI link ("" when it has one): off, or a remote Connect server's.
    ui_note: str = ""
    #: That UI answers only this kernel's Jupyter server (False: anyone who reaches its
    #: port reads it, as a context the user started or a cluster master's).
    ui_protected: bool = False
    #: The page of that UI listing its operations with their jobs (Connect; "").
    operations_page: str = ""
    #: Its share of the task slots against other sessions' ("weight 3, at least 1 slot";
    #: "pool 'x'" in a pool of the user's; "" in one queue for all: FIFO).
    share: str = ""
    #: The task slots of the context it runs on (0: unknown, as on Spark Connect).
    slots: int = 0
    #: Its Python packages of its own ("jsspkg==1.0, x-1.0-py3-none-any.whl, -r
    #: req.txt": `create --pip`, `pip`); "" when its UDFs use the kernel's.
    packages: str = ""
    #: Its streaming queries that have not ended.
    active_queries: int = 0


def share_text(session: SessionView, groups: Iterable[GroupView]) -> str:
    """ "1 of 2 slots · weight 1": the session's running tasks (its groups'
    active ones) against its context's slots, and its share of them ("" for nothing)."""
    running = sum(g.tasks.active for g in groups if g.state in ("running", "cancelling"))
    parts = []
    if session.slots:
        parts.append(f"{running} of {session.slots} slots")
    elif running:
        parts.append(f"{running} task{'' if running == 1 else 's'} running")
    if session.share:
        parts.append(session.share)
    return " · ".join(parts)


@dataclass(frozen=True)
class QueryView:
    """A streaming query of a managed session (``board/streaming_queries``). Its
    micro-batch jobs are not shown as groups: the query's figures stand for them."""

    id: str
    run_id: str
    name: str
    session: str
    #: active | stopping (a stop was asked) | stopped | failed
    state: str
    #: Why it failed (its error's first line), or why a stop could not be sent.
    error: str = ""
    #: The group id of the cell that started it ("a:5"); "" when a thread did.
    started_by: str = ""
    started_at: float = 0.0
    ended_at: float | None = None
    #: Its last completed micro-batch (None before the first).
    batch_id: int | None = None
    input_rows: int = 0
    input_rate: float | None = None  # rows a second arriving
    process_rate: float | None = None  # rows a second processed
    batch_duration_ms: int | None = None
    #: Spark's status message ("Waiting for data to arrive").
    message: str = ""
    #: Where a stop came from (sidebar, panel, cell, relay, magic, interrupt, cancel).
    stop_source: str | None = None
    #: (time, input rate, process rate) of its recent batches, oldest first.
    history: tuple[tuple[float, float, float], ...] = ()


@dataclass(frozen=True)
class BoardSnapshot:
    """Everything the views show, at one moment."""

    seq: int
    updated_at: float
    sessions: tuple[SessionView, ...] = ()
    groups: tuple[GroupView, ...] = ()
    #: Running jobs of this context outside any managed group (the user's own).
    other_running_jobs: int = 0
    error: str = ""
    queries: tuple[QueryView, ...] = ()

    def group(self, group_id: str) -> GroupView | None:
        return next((g for g in self.groups if g.id == group_id), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the protocol's ``board`` object); its groups' data
        is shared with earlier boards' (see ``GroupView.as_dict``)."""
        return {
            "seq": self.seq,
            "updated_at": self.updated_at,
            "sessions": tuple(asdict(s) for s in self.sessions),
            "groups": tuple(g.as_dict for g in self.groups),
            "other_running_jobs": self.other_running_jobs,
            "error": self.error,
            "queries": tuple(asdict(q) for q in self.queries),
        }


# -- parsing Spark's JobData -----------------------------------------------------------


def _seconds(millis: Any) -> float | None:
    return millis / 1000.0 if isinstance(millis, int | float) else None


#: Running stages a job view carries at most (its busiest): a job of 2,000 stages side
#: by side must not send 2,000 progress rows to each view at every poll (its stage rows,
#: ``GroupView.inside``, count the others).
MAX_JOB_STAGES = 10


def busiest_stages(stages: tuple[StageView, ...]) -> tuple[StageView, ...]:
    """At most ``MAX_JOB_STAGES`` of a job's running ``stages``: those running the most
    tasks, in stage order."""
    if len(stages) <= MAX_JOB_STAGES:
        return stages
    busiest = sorted(stages, key=lambda s: (-s.tasks.active, s.id))[:MAX_JOB_STAGES]
    return tuple(sorted(busiest, key=lambda s: s.id))


def parse_job(data: dict[str, Any], stages: tuple[StageView, ...] = ()) -> JobView:
    """A ``JobView`` from Spark's ``JobData`` JSON (absent fields count as 0), with its
    running ``stages`` (the busiest ``MAX_JOB_STAGES``)."""
    tasks = TaskCounts(
        total=int(data.get("numTasks", 0)),
        active=int(data.get("numActiveTasks", 0)),
        completed=int(data.get("numCompletedTasks", 0)),
        failed=int(data.get("numFailedTasks", 0)),
        killed=int(data.get("numKilledTasks", 0)),
        skipped=int(data.get("numSkippedTasks", 0)),
    )
    return JobView(
        id=int(data["jobId"]),
        name=str(data.get("name", "")),
        status=str(data.get("status", "UNKNOWN")),
        submitted_at=_seconds(data.get("submissionTime")),
        completed_at=_seconds(data.get("completionTime")),
        tasks=tasks,
        stage_ids=tuple(int(s) for s in data.get("stageIds", ())),
        kill_reasons=tuple(str(r) for r in (data.get("killedTasksSummary") or {})),
        stages=busiest_stages(stages),
        error=failure_line(str(data.get("failureReason") or "")),
        skipped_stages=int(data.get("numSkippedStages", 0)),
    )


def parse_stage(data: dict[str, Any]) -> StageView:
    """A ``StageView`` from Spark's ``SparkStageInfo`` JSON."""
    return StageView(
        id=int(data["stageId"]),
        name=str(data.get("name", "")),
        attempt=int(data.get("currentAttemptId", 0)),
        tasks=TaskCounts(
            total=int(data.get("numTasks", 0)),
            active=int(data.get("numActiveTasks", 0)),
            completed=int(data.get("numCompletedTasks", 0)),
            failed=int(data.get("numFailedTasks", 0)),
        ),
    )


GroupKey = tuple[str, "int | None"]  # (session, execution count; None: background)


def job_group(data: dict[str, Any], sessions_by_spark_tag: Mapping[str, str]) -> GroupKey | None:
    """The group of a job: (session, execution count), or None for a job of no managed
    session.

    Spark's identity is the truth: a SQL job belongs to the session that ran it, named
    by Spark's session tag (``data["sparkSession"]``, set by the job feed), whatever
    the thread was bound to; an RDD job, which Spark gives no session, belongs to the
    session its thread was bound to (``jss:<session>``). The execution count comes from
    the thread's cell tag; a job without one (a plain thread) is in the session's
    background group (count None)."""
    bound: str | None = None
    count: int | None = None
    for tag in data.get("jobTags", ()):
        parsed = job_tags.parse_tag(str(tag))
        if parsed is None:
            continue
        if parsed[1] is None:
            bound = parsed[0]
        else:
            count = parsed[1]
            bound = bound or parsed[0]
    spark_session = str(data.get("sparkSession") or "")
    session = sessions_by_spark_tag.get(spark_session) if spark_session else bound
    if session is None:
        return None
    return session, count


def group_id_of(key: GroupKey) -> str:
    """The id users see for a group key."""
    session, count = key
    if count is None:
        return job_tags.background_group_id(session)
    return job_tags.group_id(session, count)


def _targeted(job: JobView, cancel_job_ids: frozenset[int], requested_at: float | None) -> bool:
    # The jobs a cancel request aimed at: those seen running when it was made, and any
    # submitted before it that the board had not seen yet.
    if job.id in cancel_job_ids:
        return True
    return requested_at is not None and (job.submitted_at or 0.0) <= requested_at


def _was_cancelled(
    job: JobView, cancel_job_ids: frozenset[int], requested_at: float | None
) -> bool:
    # Spark reports a cancelled job as FAILED; telling them apart is ours to do. A job
    # a request aimed at, or whose tasks Spark killed for a cancellation of the job
    # (someone's cancelJobGroup, PySpark's Interrupt handler), was cancelled. Spark also
    # kills a job's running tasks when another task FAILED ("Stage cancelled: <the
    # failure>"): that job failed.
    if _targeted(job, cancel_job_ids, requested_at):
        return True
    return any(names_a_cancel(reason) for reason in job.kill_reasons)


def job_state(
    job: JobView,
    cancel_job_ids: frozenset[int] = frozenset(),
    cancel_requested_at: float | None = None,
) -> str:
    """The state a job shows in every view: ``running``, ``succeeded``, ``failed``,
    ``cancelled`` (a cancel ended it: Spark reports it FAILED) or ``lost``."""
    if job.status == "FAILED" and _was_cancelled(job, cancel_job_ids, cancel_requested_at):
        return "cancelled"
    return _STATE_OF_STATUS.get(job.status, "running")


def stated_jobs(
    jobs: Iterable[JobView], cancel_job_ids: frozenset[int], requested_at: float | None
) -> tuple[JobView, ...]:
    """``jobs``, each with the state the views show (see ``job_state``)."""
    return tuple(
        job
        if (state := job_state(job, cancel_job_ids, requested_at)) == job.state
        else replace(job, state=state)
        for job in jobs
    )


def earlier_jobs_text(jobs: Iterable[JobView]) -> str:
    """ "19 earlier jobs: 18 succeeded, 1 failed": the jobs of a group a view does not
    list, counted by state (the sidebar's and the panel's words)."""
    jobs = list(jobs)
    counts: dict[str, int] = {}
    for job in jobs:
        counts[job.state] = counts.get(job.state, 0) + 1
    states = ", ".join(f"{n} {state}" for state, n in counts.items())
    return f"{len(jobs)} earlier job{'' if len(jobs) == 1 else 's'}: {states}"


def group_state(
    jobs: Iterable[JobView],
    cancel_job_ids: frozenset[int] = frozenset(),
    cancel_requested_at: float | None = None,
) -> GroupState:
    """The observed state of a group from its jobs' Spark statuses.

    A cancel request only turns the jobs it aimed at into "cancelling"; the final state
    comes from what Spark reports once they end."""
    jobs = list(jobs)
    running = [j for j in jobs if j.running]
    if running:
        if all(_targeted(j, cancel_job_ids, cancel_requested_at) for j in running):
            return "cancelling"
        return "running"
    failed = [j for j in jobs if j.status == "FAILED"]
    if any(_was_cancelled(j, cancel_job_ids, cancel_requested_at) for j in failed):
        return "cancelled"
    if any(j.status == LOST for j in jobs):
        return "lost"
    if failed:
        return "failed"
    return "succeeded"


def failure_of(group: GroupView) -> str:
    """A failed group: the first line of why its first failed job failed ("" for any
    other state, and when Spark did not say)."""
    if group.state != "failed":
        return ""
    return next((job.error for job in group.jobs if job.state == "failed" and job.error), "")


def lost(job: JobView, now: float) -> JobView:
    """``job`` as it ends when its driver or server goes away: no task runs any more."""
    if not job.running:
        return job
    tasks = replace(job.tasks, active=0)
    return replace(job, status=LOST, state="lost", completed_at=now, tasks=tasks, stages=())


def operation_view(
    report: OperationReport, number: int, submitted_at: float, completed_at: float | None
) -> JobView:
    """A Connect operation as a ``JobView`` (job id ``number``): its stages' task counts
    as reported, and the end the client saw (an interrupted one ends cancelled)."""
    stages = report.stages
    done = report.done
    status = "RUNNING"
    if done:
        status = LOST if report.lost else "FAILED" if report.failed else "SUCCEEDED"
    total = sum(tasks for _, tasks, _, _ in stages)
    # The client's last progress report may come before the operation's last tasks
    # end: a succeeded operation ran all of its stages' tasks.
    completed = total if status == "SUCCEEDED" else sum(n for _, _, n, _ in stages)
    return JobView(
        id=number,
        # Where the user's code started it, as a classic job is named.
        name=report.call_site or "Spark Connect query",
        status=status,
        submitted_at=submitted_at,
        completed_at=completed_at,
        tasks=TaskCounts(
            total=total,
            active=0 if done else report.inflight_tasks,
            completed=completed,
        ),
        stage_ids=tuple(stage_id for stage_id, _, _, _ in stages),
        kill_reasons=(report.cancel_reason,) if report.cancel_reason else (),
        error=report.failure,
        stages=busiest_stages(
            tuple(
                StageView(id=stage_id, name="", attempt=0, tasks=TaskCounts(total=n, completed=c))
                for stage_id, n, c, stage_done in stages
                if not stage_done and not done
            )
        ),
        operation_id=report.operation_id,
    )

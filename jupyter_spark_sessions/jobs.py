"""The job board: what Spark reports about each managed session's job groups.

One producer thread (``BoardPoller``) reads Spark's status store and rebuilds an
immutable ``BoardSnapshot``: sessions -> job groups (one per cell execution) -> jobs ->
active stages, with task counts. Views (the ``jobs`` magic, the panel, the sidebar)
only read snapshots; requests (cancel) only record intent and wake the producer, which
makes the Spark calls. So a request never waits for the JVM, and a group's final state
is always the one Spark reported, never one written by the cancel itself.

A poll costs a few py4j round trips: the job count, the running jobs as one JSON reply,
and one reply per job that ended since the last poll or still has tasks winding down.
Never one per task: the cost does not grow with a job's task count.

Spark Connect lists no jobs to a client: for Connect sessions the board shows the
operations this kernel's cells submitted (one "job" each), from the progress reports the
server streams with every query, and their end as the client saw it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from . import job_tags
from .backends import connect
from .errors import UnknownGroupError, UnknownSessionError

if TYPE_CHECKING:
    from .config import SparkSessionsConfig
    from .registry import SessionRegistry

log = logging.getLogger(__name__)

GroupState = Literal["running", "cancelling", "succeeded", "failed", "cancelled"]
FINAL_STATES = ("succeeded", "failed", "cancelled")

# Spark's job statuses (JobExecutionStatus) that mean the job has ended.
_ENDED = {"SUCCEEDED", "FAILED"}
# How many ended jobs one poll fetches at most; older ones are skipped (a burst of
# thousands of tiny jobs between two polls must not stall the producer).
_MAX_ENDED_PER_POLL = 200


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
    status: str  # Spark's: RUNNING, SUCCEEDED, FAILED, UNKNOWN
    submitted_at: float | None  # epoch seconds
    completed_at: float | None
    tasks: TaskCounts
    stage_ids: tuple[int, ...]
    kill_reasons: tuple[str, ...] = ()
    stages: tuple[StageView, ...] = ()
    #: Spark Connect: the operation this "job" stands for ("" for classic jobs).
    operation_id: str = ""

    @property
    def running(self) -> bool:
        return self.status not in _ENDED


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

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES and not self.cell_running


@dataclass(frozen=True)
class FileView:
    """One file, archive or Python file added to a session."""

    name: str
    kind: str  # file | archive | pyfile
    size: int


@dataclass(frozen=True)
class SessionView:
    """A registered session, as the board shows it."""

    name: str
    origin: str
    backend: str
    master: str
    session_id: str
    isolated: bool
    directory: str
    #: Why the session's server cannot be used now ("" when it can; Connect only).
    disconnected: str = ""
    files: tuple[FileView, ...] = ()


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

    def group(self, group_id: str) -> GroupView | None:
        return next((g for g in self.groups if g.id == group_id), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the protocol's ``board`` object)."""
        return asdict(self)


# -- parsing Spark's JobData -----------------------------------------------------------


def _seconds(millis: Any) -> float | None:
    return millis / 1000.0 if isinstance(millis, int | float) else None


def parse_job(data: dict[str, Any]) -> JobView:
    """A ``JobView`` from Spark's ``JobData`` JSON (absent fields count as 0)."""
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


def group_key(data: dict[str, Any]) -> tuple[str, int] | None:
    """(session, execution count) of the group a job belongs to, from its tags."""
    for tag in data.get("jobTags", ()):
        parsed = job_tags.parse_tag(str(tag))
        if parsed is not None and parsed[1] is not None:
            return parsed[0], parsed[1]
    return None


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
    # a request aimed at, or whose tasks Spark killed for a cancellation (the kernel's
    # Interrupt button cancels all jobs), was cancelled.
    if _targeted(job, cancel_job_ids, requested_at):
        return True
    return any("cancel" in reason.lower() for reason in job.kill_reasons)


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
    if failed:
        return "failed"
    return "succeeded"


# -- the board -------------------------------------------------------------------------


@dataclass
class _Group:
    """What the board remembers about one group between polls (producer's state)."""

    session: str
    execution_count: int
    description: str = ""
    noted_at: float = field(default_factory=time.time)
    cell_running: bool = False
    job_ids: list[int] = field(default_factory=list)
    operation_ids: list[str] = field(default_factory=list)
    cancel_requested_at: float | None = None
    cancel_job_ids: frozenset[int] = frozenset()

    @property
    def id(self) -> str:
        return job_tags.group_id(self.session, self.execution_count)


@dataclass(frozen=True)
class CancelOutcome:
    """What a cancel request did: groups now cancelling, and why others were not."""

    cancelling: tuple[str, ...]
    messages: tuple[str, ...]


Listener = Callable[[BoardSnapshot], None]


class JobBoard:
    """Job groups of the managed sessions, as last observed from Spark."""

    def __init__(self, registry: SessionRegistry, config: SparkSessionsConfig) -> None:
        self.registry = registry
        self.config = config
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}
        self._jobs: dict[int, JobView] = {}
        self._operations: dict[str, JobView] = {}  # Spark Connect operations by id
        self._operation_numbers = itertools.count(1)  # shown as a Connect job id
        self._other_operations: set[str] = set()  # running, outside any managed cell
        self._connect_problems: dict[str, str] = {}  # session -> why it is unusable
        self._snapshot = BoardSnapshot(seq=0, updated_at=time.time())
        self._pending_cancels: list[tuple[str, tuple[str, ...]]] = []  # (session, tags)
        self._listeners: dict[Listener, bool] = {}  # listener -> owed a call
        self._published: tuple[Any, ...] = ()  # content last sent to listeners
        self.wake = threading.Event()  # set to make the producer poll now

    # -- reading -------------------------------------------------------------------

    def snapshot(self) -> BoardSnapshot:
        """The latest snapshot (immutable; safe from any thread)."""
        return self._snapshot

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(snapshot)`` from the producer thread after each change;
        returns the function that unsubscribes it."""
        with self._lock:
            self._listeners[listener] = True  # fresh: gets the next snapshot regardless
        self.wake.set()

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(listener, None)

        return unsubscribe

    def refresh(self, listener: Listener) -> None:
        """Have the producer call ``listener`` at its next poll even if nothing changed."""
        with self._lock:
            if listener in self._listeners:
                self._listeners[listener] = True
        self.wake.set()

    # -- what cells tell the board ---------------------------------------------------

    def cell_started(self, session: str, execution_count: int, description: str) -> None:
        """A cell began running in ``session``: its jobs will form this group."""
        gid = job_tags.group_id(session, execution_count)
        with self._lock:
            group = self._groups.get(gid)
            if group is None:
                group = self._groups[gid] = _Group(session, execution_count)
            group.description = description
            group.cell_running = True
        self.wake.set()

    def cell_finished(self, session: str, execution_count: int) -> None:
        """The cell of that group ended (its background threads may still run jobs)."""
        with self._lock:
            group = self._groups.get(job_tags.group_id(session, execution_count))
            if group is not None:
                group.cell_running = False
        self.wake.set()

    # -- what Spark Connect sessions report -------------------------------------------

    def operation_reporter(
        self, session: str
    ) -> Callable[[str, set[str], list[tuple[int, int, int, bool]], int, bool], None]:
        """The progress callback for Connect session ``session``: called in the thread
        running an operation, with that thread's tags (which name the cell's group)."""

        def report(
            operation_id: str,
            tags: set[str],
            stages: list[tuple[int, int, int, bool]],
            inflight_tasks: int,
            done: bool,
        ) -> None:
            error = connect.operation_error() if done else None  # only readable here
            key = None
            for tag in tags:
                parsed = job_tags.parse_tag(tag)
                if parsed is not None and parsed[0] == session and parsed[1] is not None:
                    key = (parsed[0], parsed[1])
            self.record_operation(session, key, operation_id, stages, inflight_tasks, done, error)

        return report

    def record_operation(
        self,
        session: str,
        key: tuple[str, int] | None,
        operation_id: str,
        stages: list[tuple[int, int, int, bool]],
        inflight_tasks: int,
        done: bool,
        error: BaseException | None = None,
    ) -> None:
        """A progress report of one Connect operation (``key``: its cell's group)."""
        now = time.time()
        with self._lock:
            if done:
                self._note_connect_outcome(session, error)
            if key is None:
                if done:
                    self._other_operations.discard(operation_id)
                else:
                    self._other_operations.add(operation_id)
                return
            gid = job_tags.group_id(*key)
            group = self._groups.get(gid)
            if group is None:
                group = self._groups[gid] = _Group(*key)
            previous = self._operations.get(operation_id)
            if previous is None:
                group.operation_ids.append(operation_id)
            self._operations[operation_id] = operation_view(
                operation_id,
                previous.id if previous else next(self._operation_numbers),
                previous.submitted_at or now if previous else now,
                stages,
                inflight_tasks,
                now if done else None,
                done,
                error,
            )
        self.wake.set()

    def _note_connect_outcome(self, session: str, error: BaseException | None) -> None:
        if error is None:
            self._connect_problems.pop(session, None)
        elif connect.is_connection_error(error):
            self._connect_problems[session] = connect.error_line(error)
        elif connect.is_lost_session(error):
            self._connect_problems[session] = (
                "the server no longer knows this session (restarted?): stop it and create it again"
            )

    def note_connect_error(self, session: str, error: BaseException) -> None:
        """A call for Connect session ``session`` failed (an interrupt, a check)."""
        with self._lock:
            self._note_connect_outcome(session, error)
        self.wake.set()

    def connect_problem(self, session: str) -> str:
        """Why the Connect session ``session`` cannot be used, as last observed."""
        with self._lock:
            return self._connect_problems.get(session, "")

    def running_operations(self, session: str) -> int:
        """How many operations of Connect session ``session`` have not ended."""
        with self._lock:
            return sum(
                1
                for g in self._groups.values()
                if g.session == session
                for op in g.operation_ids
                if self._operations[op].running
            )

    def forget_session(self, session: str) -> None:
        """A session was stopped: its problems no longer apply (its groups stay)."""
        with self._lock:
            self._connect_problems.pop(session, None)

    # -- cancel requests ---------------------------------------------------------------

    def request_cancel(
        self,
        group_ids: Iterable[str] = (),
        session: str | None = None,
        everything: bool = False,
    ) -> CancelOutcome:
        """Ask Spark to cancel groups, a whole session, or every managed session.

        Returns at once: the producer thread makes the Spark calls, and the groups show
        "cancelling" until Spark reports that their jobs ended. Unknown groups or
        sessions raise (and nothing is cancelled); finished groups are reported."""
        group_ids = list(dict.fromkeys(group_ids))
        snapshot = self._snapshot
        if session is not None:
            self.registry.get(session)  # raises UnknownSessionError
        sessions = self.registry.names() if everything else [session] if session else []
        unknown = [g for g in group_ids if snapshot.group(g) is None]
        if unknown:
            known = ", ".join(g.id for g in snapshot.groups) or "none"
            raise UnknownGroupError(
                f"No job group {', '.join(map(repr, unknown))} on the board (groups: {known})."
            )
        now = time.time()
        cancelling: list[str] = []
        messages: list[str] = []
        cancels: list[tuple[str, tuple[str, ...]]] = []
        with self._lock:
            targets = [snapshot.group(g) for g in group_ids] + [
                g for g in snapshot.groups if g.session in sessions
            ]
            for view in dict.fromkeys(t for t in targets if t is not None):
                running = frozenset(j.id for j in view.jobs if j.running)
                if not running:
                    if view.id in group_ids:
                        messages.append(f"Group {view.id} has no running job ({view.state}).")
                    continue
                group = self._groups.get(view.id)
                if group is not None:
                    group.cancel_requested_at = now
                    group.cancel_job_ids = group.cancel_job_ids | running
                cancelling.append(view.id)
                if view.session not in sessions:
                    tag = job_tags.group_tag(view.session, view.execution_count)
                    cancels.append((view.session, (tag,)))
            for name in sessions:
                # A whole session: also its jobs outside any cell group (SQL jobs of
                # plain threads carry Spark's own session tag).
                try:
                    cancels.append((name, self.registry.get(name).cancel_tags))
                except UnknownSessionError:
                    continue
            if sessions and not cancelling:
                messages.append(f"No running job group in {_which(session, everything)}.")
            self._pending_cancels.extend(cancels)
            self._snapshot = self._with_cancelling(snapshot, set(cancelling), now)
        self.wake.set()
        return CancelOutcome(tuple(cancelling), tuple(messages))

    def _with_cancelling(
        self, snapshot: BoardSnapshot, group_ids: set[str], now: float
    ) -> BoardSnapshot:
        # Show the request at once; the producer replaces this with observed states.
        if not group_ids:
            return snapshot
        groups = tuple(
            replace(g, state="cancelling", cancel_requested_at=now)
            if g.id in group_ids and g.state == "running"
            else g
            for g in snapshot.groups
        )
        return BoardSnapshot(
            seq=snapshot.seq + 1,
            updated_at=now,
            sessions=snapshot.sessions,
            groups=groups,
            other_running_jobs=snapshot.other_running_jobs,
            error=snapshot.error,
        )

    def take_pending_cancels(self) -> list[tuple[str, tuple[str, ...]]]:
        """The (session, tags) the producer must cancel now; empties the queue."""
        with self._lock:
            pending, self._pending_cancels = self._pending_cancels, []
        return pending

    # -- what the producer tells the board ---------------------------------------------

    def busy(self) -> bool:
        """True while something is worth polling fast for: a managed cell runs, a group
        has running jobs, or tasks of ended jobs are winding down."""
        with self._lock:
            if any(g.cell_running for g in self._groups.values()):
                return True
        return any(not g.finished or g.tasks_still_running for g in self._snapshot.groups)

    def settling_job_ids(self) -> list[int]:
        """Ended jobs whose tasks are still winding down: re-read them each poll."""
        with self._lock:
            return [j.id for j in self._jobs.values() if not j.running and j.tasks.active]

    def update(
        self,
        jobs: Iterable[JobView],
        keys: dict[int, tuple[str, int]],
        other_running_jobs: int,
        sessions: Iterable[SessionView],
        error: str = "",
    ) -> BoardSnapshot:
        """Record fresh job data (``keys`` maps job id -> group) and publish a snapshot."""
        with self._lock:
            for job in jobs:
                key = keys.get(job.id)
                if key is None:
                    continue
                gid = job_tags.group_id(*key)
                group = self._groups.get(gid)
                if group is None:
                    group = self._groups[gid] = _Group(*key)
                if job.id not in group.job_ids:
                    group.job_ids.append(job.id)
                self._jobs[job.id] = job
            views = [self._view(g) for g in self._groups.values()]
            views = self._retain(views)
            previous = self._snapshot
            snapshot = BoardSnapshot(
                seq=previous.seq,
                updated_at=time.time(),
                sessions=tuple(sessions),
                groups=tuple(views),
                other_running_jobs=other_running_jobs,
                error=error,
            )
            content = _content(snapshot)
            if content != _content(previous):
                snapshot = replace(snapshot, seq=previous.seq + 1)
            else:
                snapshot = previous
            self._snapshot = snapshot
            changed, self._published = content != self._published, content
            listeners = [f for f, owed in self._listeners.items() if owed or changed]
            for listener in listeners:
                self._listeners[listener] = False
        for listener in listeners:
            try:
                listener(snapshot)
            except Exception:  # one broken view must not stop the board
                log.exception("a job board listener failed")
        return snapshot

    def other_operations(self) -> int:
        """Running Connect operations outside any managed cell."""
        with self._lock:
            return len(self._other_operations)

    def _view(self, group: _Group) -> GroupView:
        jobs = tuple(self._jobs[i] for i in group.job_ids if i in self._jobs) + tuple(
            self._operations[o] for o in group.operation_ids
        )
        tasks = sum((j.tasks for j in jobs), TaskCounts())
        submitted = [j.submitted_at for j in jobs if j.submitted_at is not None]
        completed = [j.completed_at for j in jobs if j.completed_at is not None]
        state = group_state(jobs, group.cancel_job_ids, group.cancel_requested_at)
        return GroupView(
            id=group.id,
            session=group.session,
            execution_count=group.execution_count,
            description=group.description,
            state=state,
            cell_running=group.cell_running,
            submitted_at=min(submitted) if submitted else None,
            completed_at=max(completed) if completed and state in FINAL_STATES else None,
            cancel_requested_at=group.cancel_requested_at,
            tasks=tasks,
            tasks_still_running=sum(j.tasks.active for j in jobs if not j.running),
            jobs=jobs,
        )

    def _retain(self, views: list[GroupView]) -> list[GroupView]:
        # Groups that never ran a job are not shown; finished ones are kept up to the
        # configured bound (the oldest go first), with their jobs.
        shown = [v for v in views if v.jobs]
        finished = [v for v in shown if v.finished and not v.tasks_still_running]
        excess = len(finished) - self.config.retained_groups
        dropped = {v.id for v in finished[: max(0, excess)]}
        for gid in dropped:
            group = self._groups.pop(gid)
            for job_id in group.job_ids:
                self._jobs.pop(job_id, None)
            for operation_id in group.operation_ids:
                self._operations.pop(operation_id, None)
        # Cells that ran no Spark job leave no group behind.
        for gid in [
            g.id
            for g in self._groups.values()
            if not g.job_ids and not g.operation_ids and not g.cell_running
        ]:
            del self._groups[gid]
        return [v for v in shown if v.id not in dropped]


def operation_view(
    operation_id: str,
    number: int,
    submitted_at: float,
    stages: list[tuple[int, int, int, bool]],
    inflight_tasks: int,
    completed_at: float | None,
    done: bool,
    error: BaseException | None,
) -> JobView:
    """A Connect operation as a ``JobView``: its stages' task counts as reported, and
    the end the client saw (an interrupted one fails with OPERATION_CANCELED)."""
    total = sum(tasks for _, tasks, _, _ in stages)
    completed = sum(finished for _, _, finished, _ in stages)
    status = "RUNNING"
    reasons: tuple[str, ...] = ()
    if done:
        status = "FAILED" if error is not None else "SUCCEEDED"
        if connect.is_cancellation(error):
            reasons = (connect.error_line(error),)  # type: ignore[arg-type]
    return JobView(
        id=number,
        name=f"operation {operation_id[:8]}",
        status=status,
        submitted_at=submitted_at,
        completed_at=completed_at,
        tasks=TaskCounts(total=total, active=0 if done else inflight_tasks, completed=completed),
        stage_ids=tuple(stage_id for stage_id, _, _, _ in stages),
        kill_reasons=reasons,
        stages=tuple(
            StageView(id=stage_id, name="", attempt=0, tasks=TaskCounts(total=n, completed=c))
            for stage_id, n, c, stage_done in stages
            if not stage_done and not done
        ),
        operation_id=operation_id,
    )


def _which(session: str | None, everything: bool) -> str:
    return "any session" if everything else f"session '{session}'"


def _content(snapshot: BoardSnapshot) -> tuple[Any, ...]:
    return (snapshot.sessions, snapshot.groups, snapshot.other_running_jobs, snapshot.error)


# -- the producer ------------------------------------------------------------------------


class BoardPoller:
    """The one thread that talks to Spark for the board: it makes the cancel calls the
    board queued, then reads the status store and publishes a snapshot; fast while jobs
    run (``poll_interval``), slow when idle (``idle_poll_interval``), at once when woken."""

    def __init__(self, board: JobBoard) -> None:
        self.board = board
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._reader: Any = None  # classic.JobStatusReader of the current context
        self._context: Any = None
        self._master = ""
        self._last_total = 0
        self._last_running: set[int] = set()
        self._reachability: dict[str, tuple[float, str]] = {}  # server -> (when, why not)

    def start(self) -> None:
        """Start the thread (idempotent)."""
        with self._start_lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="jss-job-board", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the thread and wait up to ``timeout`` for it (kernel shutdown)."""
        self._stopping.set()
        self.board.wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        config = self.board.config
        while not self._stopping.is_set():
            self.board.wake.clear()
            try:
                self.poll_once()
            except Exception as exc:  # the JVM went away, a py4j hiccup: report, go on
                log.debug("job board poll failed", exc_info=True)
                self._reader = None
                self.board.update([], {}, 0, self._sessions(), error=_one_line(exc))
            interval = config.poll_interval if self.board.busy() else config.idle_poll_interval
            self.board.wake.wait(interval)

    def poll_once(self) -> BoardSnapshot:
        """One round: queued cancels, then fresh status (also callable from tests)."""
        from .backends import classic

        registry = self.board.registry
        for session, tags in self.board.take_pending_cancels():
            try:
                managed = registry.get(session)
            except UnknownSessionError:
                continue  # stopped meanwhile: `stop` already cancelled its jobs
            if managed.stopped:
                continue
            if managed.is_connect:
                self._interrupt(session, managed, tags)
            else:
                for tag in tags:
                    managed.sc.cancelJobsWithTag(tag)
        sessions = self._sessions()
        other_operations = self.board.other_operations()
        has_classic = any(s.backend == "classic" for s in sessions)
        sc = classic.active_context() if has_classic else None
        if sc is None or classic.context_is_stopped(sc):
            self._reader = None
            return self.board.update([], {}, other_operations, sessions)
        reader = self._reader_for(sc)
        total = reader.total_jobs()
        running = reader.running_jobs()
        running_ids = {int(d["jobId"]) for d in running}
        ended = (self._last_running | set(range(self._last_total, total))) - running_ids
        wanted = sorted(ended | set(self.board.settling_job_ids()))[-_MAX_ENDED_PER_POLL:]
        data = running + [d for d in map(reader.job, wanted) if d is not None]
        self._last_total, self._last_running = total, running_ids
        keys = {int(d["jobId"]): k for d in data if (k := group_key(d)) is not None}
        jobs = [parse_job(d) for d in data if int(d["jobId"]) in keys]
        jobs = self._with_stages(reader, jobs)
        other = sum(1 for job_id in running_ids if job_id not in keys) + other_operations
        return self.board.update(jobs, keys, other, sessions)

    def _interrupt(self, session: str, managed: Any, tags: tuple[str, ...]) -> None:
        # A whole session: interruptAll (every operation of it, any thread). Run off
        # this thread: a server that does not answer must not stall the board.
        def done(_: list[str], error: BaseException | None) -> None:
            if error is not None:
                log.warning("interrupting Spark Connect session %r failed: %s", session, error)
                self.board.note_connect_error(session, error)

        everything = tags == managed.cancel_tags
        connect.interrupt_in_background(managed.session, None if everything else tags, done)

    def _reader_for(self, sc: Any) -> Any:
        from .backends import classic

        if self._reader is None or self._context is not sc:
            self._reader = classic.JobStatusReader(sc)
            self._context = sc
            self._master = str(sc.master)
            # Jobs from before the first session are not ours; recent ones may be.
            self._last_total = max(0, self._reader.total_jobs() - 50)
            self._last_running = set()
        return self._reader

    def _with_stages(self, reader: Any, jobs: list[JobView]) -> list[JobView]:
        running = [j for j in jobs if j.running]
        if not running:
            return jobs
        active = set(reader.active_stage_ids())
        wanted = sorted(active & {s for j in running for s in j.stage_ids})
        stages = {}
        for stage_id in wanted:
            data = reader.stage(stage_id)
            if data is not None:
                stages[stage_id] = parse_stage(data)
        return [
            replace(j, stages=tuple(stages[s] for s in j.stage_ids if s in stages))
            if j.running
            else j
            for j in jobs
        ]

    def _sessions(self) -> list[SessionView]:
        registry = self.board.registry
        views = []
        for name in registry.names():
            try:
                managed = registry.get(name)
            except UnknownSessionError:
                continue  # stopped while we looked
            views.append(
                SessionView(
                    name=managed.name,
                    origin=managed.origin,
                    backend=managed.backend,
                    master=managed.endpoint.display if managed.endpoint else self._master,
                    session_id=managed.session_id,
                    isolated=managed.isolated,
                    directory=str(managed.directory),
                    disconnected=self._connect_state(managed) if managed.is_connect else "",
                    files=tuple(FileView(a.name, a.kind, a.size) for a in managed.artifacts.list()),
                )
            )
        return views

    def _connect_state(self, managed: Any) -> str:
        # A TCP check per server at most every idle interval (cheap, bounded), plus
        # what the session's own calls last reported.
        endpoint = managed.endpoint
        now = time.monotonic()
        checked = self._reachability.get(endpoint.display)
        if checked is None or now - checked[0] >= self.board.config.idle_poll_interval:
            checked = (now, connect.reachable(endpoint, timeout=0.5))
            self._reachability[endpoint.display] = checked
        if checked[1]:
            return f"{endpoint.display} unreachable: {checked[1]}"
        return self.board.connect_problem(managed.name)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"Spark status unavailable: {text[0] if text else type(exc).__name__}"

"""The job board's state: what it remembers of each managed session's job groups.

One producer thread (``poller.BoardPoller``) feeds it Spark's job data and publishes
immutable snapshots (``snapshot.BoardSnapshot``); views only read snapshots. Requests
(cancel) only record intent here and wake the producer, which makes the Spark calls
(``SessionBackend.cancel``): a request never waits for the JVM, and a group's final
state is always the one Spark reported, never one written by the cancel itself.

The board knows sessions only through ``SessionSource`` (the registry implements it).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from . import job_tags
from .errors import UnknownGroupError, UnknownSessionError
from .snapshot import (
    FINAL_STATES,
    BoardSnapshot,
    GroupView,
    JobView,
    SessionView,
    TaskCounts,
    group_state,
    operation_view,
)

if TYPE_CHECKING:
    from .backends.base import OperationReport, OperationSink, SessionBackend
    from .config import SparkSessionsConfig

log = logging.getLogger(__name__)


class SessionSource(Protocol):
    """What the board needs to know of the registered sessions."""

    def names(self) -> list[str]:
        """Registered session names, in registration order."""
        ...

    def backend(self, name: str) -> SessionBackend:
        """The backend of session ``name``; UnknownSessionError when there is none."""
        ...

    def describe(self, name: str, running_jobs: int | None = None) -> SessionView:
        """How views show session ``name`` (``running_jobs``: when already known)."""
        ...


@dataclass
class _Group:
    """What the board remembers about one group between polls (producer's state)."""

    session: str
    execution_count: int
    description: str = ""
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


@dataclass(frozen=True)
class PendingCancel:
    """A cancel the producer must make: ``tags`` of ``session`` (None: all its jobs)."""

    session: str
    backend: SessionBackend
    tags: tuple[str, ...] | None


Listener = Callable[[BoardSnapshot], None]


class JobBoard:
    """Job groups of the managed sessions, as last observed from Spark."""

    def __init__(self, sessions: SessionSource, config: SparkSessionsConfig) -> None:
        self.sessions = sessions
        self.config = config
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}
        self._jobs: dict[int, JobView] = {}
        self._operations: dict[str, JobView] = {}  # Spark Connect operations by id
        self._operation_numbers = itertools.count(1)  # shown as a Connect job id
        self._other_operations: set[str] = set()  # running, outside any managed cell
        self._snapshot = BoardSnapshot(seq=0, updated_at=time.time())
        self._pending_cancels: list[PendingCancel] = []
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
        with self._lock:
            group = self._group(session, execution_count)
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

    # -- what backends that report their own operations tell the board (Connect) ----

    def operation_sink(self, session: str) -> OperationSink:
        """Where session ``session``'s backend sends its operations' progress."""
        return lambda report: self.record_operation(session, report)

    def record_operation(self, session: str, report: OperationReport) -> None:
        """A progress report of one operation of ``session``; its thread's tags name
        the cell's group (none: an operation outside any managed cell)."""
        now = time.time()
        key = None
        for tag in report.thread_tags:
            parsed = job_tags.parse_tag(tag)
            if parsed is not None and parsed[0] == session and parsed[1] is not None:
                key = (parsed[0], parsed[1])
        operation_id = report.operation_id
        with self._lock:
            if key is None:
                if report.done:
                    self._other_operations.discard(operation_id)
                else:
                    self._other_operations.add(operation_id)
            else:
                group = self._group(*key)
                previous = self._operations.get(operation_id)
                if previous is None:
                    group.operation_ids.append(operation_id)
                self._operations[operation_id] = operation_view(
                    report,
                    previous.id if previous else next(self._operation_numbers),
                    (previous.submitted_at or now) if previous else now,
                    now if report.done else None,
                )
        self.wake.set()

    def other_operations(self) -> int:
        """Running operations outside any managed cell."""
        with self._lock:
            return len(self._other_operations)

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
            self.sessions.backend(session)  # raises UnknownSessionError
        sessions = self.sessions.names() if everything else [session] if session else []
        unknown = [g for g in group_ids if snapshot.group(g) is None]
        if unknown:
            known = ", ".join(g.id for g in snapshot.groups) or "none"
            raise UnknownGroupError(
                f"No job group {', '.join(map(repr, unknown))} on the board (groups: {known})."
            )
        now = time.time()
        cancelling: list[str] = []
        messages: list[str] = []
        cancels: list[PendingCancel] = []
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
                    cancels += self._cancel_of(view.session, (tag,))
            for name in sessions:
                # A whole session: also its jobs outside any cell group.
                cancels += self._cancel_of(name, None)
            if sessions and not cancelling:
                messages.append(f"No running job group in {_which(session, everything)}.")
            self._pending_cancels.extend(cancels)
            self._snapshot = _with_cancelling(snapshot, set(cancelling), now)
        self.wake.set()
        return CancelOutcome(tuple(cancelling), tuple(messages))

    def _cancel_of(self, session: str, tags: tuple[str, ...] | None) -> list[PendingCancel]:
        try:
            return [PendingCancel(session, self.sessions.backend(session), tags)]
        except UnknownSessionError:
            return []  # stopped meanwhile: `stop` already cancelled its jobs

    def take_pending_cancels(self) -> list[PendingCancel]:
        """The cancels the producer must make now; empties the queue."""
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
                group = self._group(*key)
                if job.id not in group.job_ids:
                    group.job_ids.append(job.id)
                self._jobs[job.id] = job
            views = self._retain([self._view(g) for g in self._groups.values()])
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

    # -- internals (under ``_lock``) ---------------------------------------------------

    def _group(self, session: str, execution_count: int) -> _Group:
        gid = job_tags.group_id(session, execution_count)
        group = self._groups.get(gid)
        if group is None:
            group = self._groups[gid] = _Group(session, execution_count)
        return group

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


def _with_cancelling(snapshot: BoardSnapshot, group_ids: set[str], now: float) -> BoardSnapshot:
    # Show the request at once; the producer replaces this with observed states.
    if not group_ids:
        return snapshot
    groups = tuple(
        replace(g, state="cancelling", cancel_requested_at=now)
        if g.id in group_ids and g.state == "running"
        else g
        for g in snapshot.groups
    )
    return replace(snapshot, seq=snapshot.seq + 1, updated_at=now, groups=groups)


def _which(session: str | None, everything: bool) -> str:
    return "any session" if everything else f"session '{session}'"


def _content(snapshot: BoardSnapshot) -> tuple[Any, ...]:
    return (snapshot.sessions, snapshot.groups, snapshot.other_running_jobs, snapshot.error)

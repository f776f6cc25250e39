"""The job board's state: what it remembers of each managed session's job groups.

One producer thread (``poller.BoardPoller``) feeds it Spark's job data and publishes
immutable snapshots (``snapshot.BoardSnapshot``); views only read snapshots. Requests
(cancel) only record intent here and wake the producer's cancel thread, which makes the
Spark calls (``SessionBackend.cancel``): a request never waits for the JVM, and a
group's final state is always the one Spark reported, never the cancel's.

The board knows sessions only through ``SessionSource`` (the registry implements it).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from .. import job_tags
from ..errors import UnknownGroupError, UnknownSessionError
from .cancel_requests import CancelOutcome, PendingCancel
from .diagnosis import thresholds_of
from .group_inside import StagesRead
from .group_records import CellRecord, GroupRecord
from .inside_views import GroupInside
from .snapshot import (
    BoardSnapshot,
    GroupKey,
    GroupView,
    JobView,
    SessionView,
    group_id_of,
    lost,
    operation_view,
)
from .streaming_queries import StreamingQueries

if TYPE_CHECKING:
    from ..backends.base import JobRef, OperationReport, OperationSink, SessionBackend
    from ..config import SparkSessionsConfig

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


Listener = Callable[[BoardSnapshot], None]


class JobBoard:
    """Job groups of the managed sessions, as last observed from Spark."""

    def __init__(self, sessions: SessionSource, config: SparkSessionsConfig) -> None:
        self.sessions = sessions
        self.config = config
        self._lock = threading.Lock()
        self._cells: dict[int, CellRecord] = {}
        self._groups: dict[str, GroupRecord] = {}
        self._jobs: dict[int, JobView] = {}
        self._operations: dict[str, JobView] = {}  # Spark Connect operations by id
        #: Each Connect operation's stages the client reported done (its view keeps only
        #: its busiest running ones): which of them to read to their end.
        self._done_stages: dict[str, frozenset[int]] = {}
        self._operation_numbers = itertools.count(1)  # shown as a Connect job id
        self._retired_numbers = itertools.count(1)  # keys of a replaced context's jobs
        self._snapshot = BoardSnapshot(seq=0, updated_at=time.time())
        self._pending_cancels: list[PendingCancel] = []
        self._listeners: dict[Listener, bool] = {}  # listener -> owed a call
        self._published: tuple[Any, ...] = ()  # content last sent to listeners
        self.wake = threading.Event()  # set to wake the producer (see take_wake)
        self._wake_lock = threading.Lock()
        self._urgent = False  # a wake that wants a poll at once
        self.cancel_ready = threading.Event()  # set when a cancel is queued
        #: Sessions stopped while their groups ran, by name: the producer goes on reading
        #: their jobs until those groups end (``retiring``).
        self._retiring: dict[str, SessionBackend] = {}
        self._released: set[str] = set()  # retiring sessions whose release has finished
        #: The sessions' streaming queries (read by the producer, stopped on request).
        self.queries = StreamingQueries(wake=self.wake_now)
        #: The stages' figures and executors' slots of the last read.
        self._stages = StagesRead()
        self._thresholds = thresholds_of(config)

    # -- reading -------------------------------------------------------------------

    def snapshot(self) -> BoardSnapshot:
        """The latest snapshot (immutable; safe from any thread)."""
        return self._snapshot

    def publish_sessions(self, sessions: tuple[SessionView, ...]) -> BoardSnapshot:
        """The latest snapshot with ``sessions`` (the registry's now, as a request read
        them), published at once when they differ from its own, as a cancel's
        "cancelling" is: listeners get it with the next poll, which describes them anew.
        Its ``updated_at`` stays that of the last read of Spark's jobs."""
        with self._lock:
            snapshot = self._snapshot
            if snapshot.sessions != sessions:
                snapshot = replace(snapshot, seq=snapshot.seq + 1, sessions=sessions)
                self._snapshot = snapshot
            return snapshot

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(snapshot)`` from the producer thread after each change;
        returns the function that unsubscribes it."""
        with self._lock:
            self._listeners[listener] = True  # fresh: gets the next snapshot regardless
        self.wake_now()

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(listener, None)

        return unsubscribe

    def refresh(self, listener: Listener) -> None:
        """Have the producer call ``listener`` at its next poll even if nothing changed."""
        with self._lock:
            if listener in self._listeners:
                self._listeners[listener] = True
        self.wake_now()

    # -- waking the producer -----------------------------------------------------------

    def wake_now(self) -> None:
        """Make the producer poll at once (a request, a new session or file)."""
        with self._wake_lock:
            self._urgent = True
            self.wake.set()

    def _wake_soon(self) -> None:
        # A cell started or ended: the producer polls at its fast rate from now on, but
        # not at once: a short cell would otherwise wait for a poll made beside it.
        self.wake.set()

    def take_wake(self) -> bool:
        """For the producer, once woken: True when it must poll at once, False when
        only cells started or ended (the wake is then cleared)."""
        with self._wake_lock:
            urgent, self._urgent = self._urgent, False
            if not urgent:
                self.wake.clear()
            return urgent

    def clear_wake(self) -> None:
        """For the producer, as a poll begins: what woke it is served by this poll."""
        with self._wake_lock:
            self._urgent = False
            self.wake.clear()

    # -- what cells tell the board ---------------------------------------------------

    def cell_started(
        self, session: str, execution_count: int, description: str = "", source: str = ""
    ) -> None:
        """A cell began running bound to ``session``: its jobs form the groups
        ``<session>:<execution_count>`` of whichever sessions run them. Each group is
        described by the code of ``source`` that ran its first job (its call site, when
        that is a line of this cell), else by ``description``, else by the first line of
        code of ``source``."""
        with self._lock:
            cell = self._cells.setdefault(execution_count, CellRecord())
            if not cell.description and cell.source is None:
                cell.description, cell.source = description, (source or None)
            cell.depth += 1
            self._group((session, execution_count))
        self._wake_soon()

    def cell_finished(self, session: str, execution_count: int) -> None:
        """The cell of that group ended (its background threads may still run jobs)."""
        with self._lock:
            cell = self._cells.get(execution_count)
            if cell is not None:
                cell.depth = max(0, cell.depth - 1)
        self._wake_soon()

    # -- what backends that report their own operations tell the board (Connect) ----

    def operation_sink(self, session: str) -> OperationSink:
        """Where session ``session``'s backend sends its operations' progress."""
        return lambda report: self.record_operation(session, report)

    def record_operation(self, session: str, report: OperationReport) -> None:
        """A progress report of one operation of ``session``, filed under the managed
        cell its thread runs (or the session's background group)."""
        now = time.time()
        operation_id = report.operation_id
        with self._lock:
            group = self._group((session, report.thread_cell))
            previous = self._operations.get(operation_id)
            if previous is None:
                group.operation_ids.append(operation_id)
            done = frozenset(stage for stage, _, _, ended in report.stages if ended)
            self._done_stages[operation_id] = done
            self._operations[operation_id] = operation_view(
                report,
                previous.id if previous else next(self._operation_numbers),
                (previous.submitted_at or now) if previous else now,
                now if report.done else None,
            )
            if not report.done:
                self._cancel_if_requested(group, [self._operations[operation_id]])
        self.wake_now()

    # -- cancel requests ---------------------------------------------------------------

    def request_cancel(
        self,
        group_ids: Iterable[str] = (),
        session: str | None = None,
        everything: bool = False,
        source: str | None = None,
    ) -> CancelOutcome:
        """Ask Spark to cancel groups, a whole session, or every managed session:
        exactly the jobs the board shows under them, and those it sees there later.

        Returns at once: the producer thread makes the Spark calls, and the groups show
        "cancelling" until Spark reports that their jobs ended. Unknown groups or
        sessions raise (and nothing is cancelled); finished groups are reported.
        ``source`` (sidebar, panel, cell, relay, magic, stop) is named in the error of
        the cancelled cell."""
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
        # A session's streaming queries are its work too: stopped (a request, as this).
        for name in sessions:
            for query in self.queries.request_stop_session(name, source):
                messages.append(f"Stopping streaming query {query} of session '{name}'.")
        with self._lock:
            targets = [snapshot.group(g) for g in group_ids] + [
                g for g in snapshot.groups if g.session in sessions
            ]
            for view in dict.fromkeys(t for t in targets if t is not None):
                # A group whose cell still runs is cancelled between two of its jobs
                # too (or before Spark reported its next one): what comes next is its.
                if not any(j.running for j in view.jobs) and not self._cell_runs(view.id):
                    if view.id in group_ids:
                        messages.append(f"Group {view.id} has no running job ({view.state}).")
                    continue
                cancelling.append(view.id)
            for view in dict.fromkeys(t for t in targets if t is not None):
                group = self._groups.get(view.id)
                if group is not None and view.id in cancelling:
                    self._mark_cancelled(group, now, source)
                    between_jobs = not any(j.running for j in view.jobs)
                    if between_jobs and group.count is not None:
                        # Its cell's next job, which Spark may run unreported yet.
                        tag = job_tags.group_tag(group.session, group.count)
                        self._queue(group.session, tag=tag)
            for name in sessions:
                # Its groups that show no job yet (a cell just started) are cancelled
                # too, and Spark cancels its SQL jobs the board has not seen.
                for group in [g for g in self._groups.values() if g.session == name]:
                    self._mark_cancelled(group, now, source)
                self._queue(name, whole_session=True)
            if sessions and not cancelling and not messages:
                messages.append(f"No running job group in {_which(session, everything)}.")
            self._snapshot = _with_cancelling(snapshot, set(cancelling), now)
        self.wake_now()
        return CancelOutcome(tuple(cancelling), tuple(messages))

    def request_interrupt(self, session: str, execution_count: int) -> None:
        """The kernel's Interrupt during the cell ``execution_count`` bound to
        ``session``: cancel that cell's jobs in whatever sessions ran them (its thread
        tag reaches the ones the board has not seen yet), and nothing else."""
        now = time.time()
        with self._lock:
            for group in [g for g in self._groups.values() if g.count == execution_count]:
                self._mark_cancelled(group, now, "interrupt")
            self._queue(session, tag=job_tags.group_tag(session, execution_count))
        self.wake_now()

    def cancels_of_cell(self, execution_count: int) -> list[tuple[str, str | None, list[int]]]:
        """(group id, source, ids of the jobs cancelled by id) of the cell's cancelled groups."""
        with self._lock:
            hit = [g for g in self._groups.values() if g.count == execution_count]
            hit = [g for g in hit if g.cancel_requested_at is not None]
            ran = [g for g in hit if g.job_ids or g.operation_ids] or hit  # ran jobs, if any did
            return [
                (g.id, g.cancel_source, sorted(map(self._shown_id, g.cancel_sent))) for g in ran
            ]

    def _shown_id(self, ref: JobRef) -> int:
        # A Connect operation is shown by the number the board gave it.
        if isinstance(ref, str):
            operation = self._operations.get(ref)
            return operation.id if operation is not None else 0
        return ref

    def _cell_runs(self, group_id: str) -> bool:
        # Under _lock: whether the cell of that group runs now (the snapshot may be a
        # poll behind).
        group = self._groups.get(group_id)
        cell = self._cells.get(group.count) if group and group.count is not None else None
        return cell is not None and cell.running

    def _mark_cancelled(self, group: GroupRecord, now: float, source: str | None = None) -> None:
        # Under _lock. The jobs running now, and any seen later, get a cancel.
        group.cancel_requested_at = group.cancel_requested_at or now
        group.cancel_source = group.cancel_source or source
        jobs = [self._jobs[i] for i in group.job_ids if i in self._jobs] + [
            self._operations[o] for o in group.operation_ids
        ]
        self._cancel_if_requested(group, jobs)

    def _cancel_if_requested(self, group: GroupRecord, jobs: Iterable[JobView]) -> None:
        # Under _lock: send a cancel for each running job of a cancelled group, once. A
        # stopped session's later jobs too: a query's next job (adaptive execution submits
        # one per stage) may start after the stop's cancel was sent.
        stopped = group.session in self._retiring
        running = [j for j in jobs if j.running]
        if stopped and group.cancel_requested_at is None and running:
            group.cancel_requested_at, group.cancel_source = time.time(), "stop"
        requested_at = group.cancel_requested_at
        if requested_at is None:
            return
        if group.count is None and not stopped:  # background: a thread's new work is spared
            running = [j for j in running if (j.submitted_at or 0.0) <= requested_at]
        group.cancel_job_ids = group.cancel_job_ids | {j.id for j in running}  # aimed at
        refs = [j.operation_id or j.id for j in running]
        refs = [r for r in refs if r not in group.cancel_sent]
        if refs:
            group.cancel_sent.update(refs)
            self._queue(group.session, refs=tuple(refs))

    def _queue(
        self,
        session: str,
        refs: tuple[JobRef, ...] = (),
        whole_session: bool = False,
        tag: str | None = None,
    ) -> None:
        try:
            backend = self.sessions.backend(session)
        except UnknownSessionError:
            if session not in self._retiring:
                return  # released: nothing of it runs any more
            backend = self._retiring[session]
        self._pending_cancels.append(PendingCancel(session, backend, refs, whole_session, tag))
        self.cancel_ready.set()

    def take_pending_cancels(self) -> list[PendingCancel]:
        """The cancels the producer must make now; empties the queue."""
        with self._lock:
            pending, self._pending_cancels = self._pending_cancels, []
        return pending

    # -- stopped sessions ------------------------------------------------------------

    def retire(self, session: str, backend: SessionBackend) -> None:
        """``session`` was stopped (its jobs cancelled): until it is released, cancel any
        job of it seen running, and follow its groups until they end, so that they show
        how they ended, not "cancelling" for ever."""
        with self._lock:
            self._retiring[session] = backend
            self._released.discard(session)
        self.wake_now()

    def released(self, session: str) -> None:
        """The stopped ``session`` was released (no job of it ran for a while)."""
        with self._lock:
            self._released.add(session)
        self.wake_now()

    def retiring(self) -> dict[str, SessionBackend]:
        """For the producer: the stopped sessions not yet released or whose groups have
        not all ended yet (the others are let go here), with their backends."""
        groups = self._snapshot.groups
        with self._lock:
            for name in list(self._retiring):
                if name in self._released and not any(
                    g.session == name and (not g.finished or g.tasks_still_running) for g in groups
                ):
                    del self._retiring[name]
                    self._released.discard(name)
            return dict(self._retiring)

    # -- what the producer tells the board ---------------------------------------------

    def busy(self) -> bool:
        """Whether to poll fast: a cell runs, a group runs, ended jobs' tasks wind down
        or their stages' end is not read yet (a Connect server's UI lags its results)."""
        with self._lock:
            if any(c.running for c in self._cells.values()):
                return True
        return any(
            not g.finished or g.tasks_still_running or g.stage_still_active
            for g in self._snapshot.groups
        )

    def winding_down_cancel(self) -> bool:
        """True for a few seconds after a cancel request while its group still shows a
        job or task running: the producer polls faster then, so that the cancel's end
        shows, and a killed task's Python worker is ended (``jss.KilledTaskWorkers``),
        soon after Spark marks the tasks killed, which comes a moment after the request."""
        now = time.time()
        return any(
            g.cancel_requested_at is not None
            and now - g.cancel_requested_at < _CANCEL_WIND_DOWN_SECONDS
            and (g.state == "cancelling" or g.tasks_still_running)
            for g in self._snapshot.groups
        )

    def operation_stage_ids(
        self, session: str, ended_within: float = 30.0
    ) -> tuple[set[int], set[int]]:
        """The stages of session ``session``'s Connect operations worth a read: those
        running (or not started), and those that ended (the client said so, or their
        operation ended within ``ended_within`` seconds)."""
        since = time.time() - ended_within
        running: set[int] = set()
        ended: set[int] = set()
        with self._lock:
            for group in self._groups.values():
                if group.session != session:
                    continue
                for key in group.operation_ids:
                    operation = self._operations[key]
                    if operation.running:
                        done = self._done_stages.get(key, frozenset())
                        running.update(s for s in operation.stage_ids if s not in done)
                        ended.update(done)
                    elif (operation.completed_at or 0) >= since:
                        ended.update(operation.stage_ids)
        return running, ended

    def settling_job_ids(self) -> list[int]:
        """Jobs shown running or whose tasks still wind down: re-read each poll (a poll
        lost after Spark was read must not leave a job shown running for ever)."""
        with self._lock:
            return [j.id for j in self._jobs.values() if j.running or j.tasks.active]

    def update(
        self,
        jobs: Iterable[JobView],
        keys: dict[int, GroupKey],
        other_running_jobs: int,
        sessions: Iterable[SessionView],
        error: str = "",
        stages: StagesRead | None = None,
    ) -> BoardSnapshot:
        """Record fresh job data (``keys`` maps job id -> group) and publish a snapshot;
        with ``stages`` (read with the jobs), the stages' figures and a slot sample of
        each running group."""
        with self._lock:
            for job in jobs:
                key = keys.get(job.id)
                if key is None:
                    continue
                group = self._group(key)
                if job.id not in group.job_ids:
                    group.job_ids.append(job.id)
                self._jobs[job.id] = job
                self._cancel_if_requested(group, [job])
            if stages is not None:
                self._stages = stages
                self._sample_slots(time.time())
            sessions = tuple(sessions)
            self._end_lost_jobs({v.name for v in sessions if v.disconnected})
            views = self._retain([self._view(g) for g in self._groups.values()])
            previous = self._snapshot
            snapshot = BoardSnapshot(
                seq=previous.seq,
                updated_at=time.time(),
                sessions=sessions,
                groups=tuple(views),
                other_running_jobs=other_running_jobs,
                error=error,
                queries=self.queries.views(),
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

    def context_replaced(self) -> None:
        """A new SparkContext replaced a stopped or lost one: its job ids start again
        from 0, so the old context's jobs stay on their groups (ended, or lost if they
        still ran) but no longer answer to their job ids."""
        now = time.time()
        with self._lock:
            for group in self._groups.values():
                for job_id in group.job_ids:
                    job = self._jobs.get(job_id)
                    if job is not None:
                        key = f"ended-context-job-{next(self._retired_numbers)}"
                        self._operations[key] = replace(lost(job, now), previous_driver=True)
                        group.operation_ids.append(key)
                group.job_ids.clear()
            self._jobs.clear()
        self.wake_now()

    # -- internals (under ``_lock``) ---------------------------------------------------

    def _end_lost_jobs(self, sessions: set[str]) -> None:
        # The driver or server of these sessions went away: their jobs never report
        # their end, so they end here, as lost.
        if not sessions:
            return
        now = time.time()
        for group in [g for g in self._groups.values() if g.session in sessions]:
            for job_id in group.job_ids:
                job = self._jobs.get(job_id)
                if job is not None and job.running:
                    self._jobs[job_id] = lost(job, now)
            for key in group.operation_ids:
                if self._operations[key].running:
                    self._operations[key] = lost(self._operations[key], now)

    def _group(self, key: GroupKey) -> GroupRecord:
        gid = group_id_of(key)
        group = self._groups.get(gid)
        if group is None:
            group = self._groups[gid] = GroupRecord(*key)
        return group

    def _view(self, group: GroupRecord) -> GroupView:
        # By id (Spark's submission order), whatever order polls found them in.
        jobs = tuple(self._jobs[i] for i in sorted(group.job_ids) if i in self._jobs) + tuple(
            self._operations[o] for o in group.operation_ids
        )
        cell = self._cells.get(group.count) if group.count is not None else None
        return group.view_of(jobs, cell, self._inside(group, jobs))

    def _sample_slots(self, now: float) -> None:
        for group in self._groups.values():
            jobs = [self._jobs[i] for i in group.job_ids if i in self._jobs]
            jobs += [self._operations[o] for o in group.operation_ids]
            group.sample_slots(now, jobs, self._stages.of_session(group.session))

    def _inside(self, group: GroupRecord, jobs: tuple[JobView, ...]) -> GroupInside | None:
        read = self._stages.of_session(group.session)
        cell = self._cells.get(group.count) if group.count is not None else None
        running = cell is not None and cell.running
        return group.inside_now(jobs, read.figures, self._thresholds, running)

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
                self._done_stages.pop(operation_id, None)
        # Cells that ran no Spark job leave no group behind.
        running_cells = {n for n, c in self._cells.items() if c.running}
        for gid in [
            g.id
            for g in self._groups.values()
            if not g.job_ids and not g.operation_ids and g.count not in running_cells
        ]:
            del self._groups[gid]
        # A cell's description outlives its groups for a while: a thread it started may
        # run its first job after the cell ended (its group appears only then).
        counts = {g.count for g in self._groups.values()}
        spare = [n for n in self._cells if n not in counts and n not in running_cells]
        for n in spare[: max(0, len(spare) - self.config.retained_groups)]:
            del self._cells[n]
        return [v for v in shown if v.id not in dropped]


#: How long after a cancel request the producer may poll faster (``winding_down_cancel``).
_CANCEL_WIND_DOWN_SECONDS = 3.0


def _with_cancelling(snapshot: BoardSnapshot, group_ids: set[str], now: float) -> BoardSnapshot:
    # Show the request at once; the producer replaces this with observed states.
    if not group_ids:
        return snapshot
    groups = tuple(
        replace(g, state="cancelling", cancel_requested_at=now) if g.id in group_ids else g
        for g in snapshot.groups
    )
    return replace(snapshot, seq=snapshot.seq + 1, updated_at=now, groups=groups)


def _which(session: str | None, everything: bool) -> str:
    return "any session" if everything else f"session '{session}'"


def _content(snapshot: BoardSnapshot) -> tuple[Any, ...]:
    return (
        snapshot.sessions,
        snapshot.groups,
        snapshot.other_running_jobs,
        snapshot.error,
        snapshot.queries,
    )

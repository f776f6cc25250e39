"""The board's producer: the one thread that talks to Spark for the job board.

Each round it makes the cancels the board queued (``SessionBackend.cancel``), reads the
jobs of every session's ``JobFeed`` (one per SparkContext, shared by its classic
sessions) and publishes a snapshot. A classic context's read is one py4j round trip
(``job_feed.JobStatusReader``), whatever the number of jobs, stages and tasks. Backends
without a feed (Spark Connect) report their operations to the board themselves; their
stages' figures come from their server's ``StageSource`` (one per server).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UnknownSessionError
from .group_inside import StagesRead
from .snapshot import (
    BoardSnapshot,
    GroupKey,
    JobView,
    SessionView,
    job_group,
    parse_job,
    parse_stage,
    status_is_running,
)
from .stage_figures import StageFigures, parse_stage_figures

if TYPE_CHECKING:
    from ..backends.base import JobFeed, SessionBackend, StageSource
    from .job_board import JobBoard

log = logging.getLogger(__name__)

#: Seconds between polls at most while a streaming query runs (its figures refresh at
#: this rate: ``streaming_queries.REFRESH_SECONDS``).
QUERY_POLL_INTERVAL = 1.0
#: Seconds between polls while a cancelled group winds down (``JobBoard.winding_down_cancel``).
CANCEL_POLL_INTERVAL = 0.05


class BoardPoller:
    """Polls fast while jobs run (``poll_interval``), slowly when idle
    (``idle_poll_interval``), at once when the board is woken.

    Cancels have a thread of their own (``jss-job-cancel``), woken by the board's
    ``cancel_ready``: a request's Spark call starts at once instead of after the poll
    in progress (a fifth of the whole cancel when Spark itself is fast). Each thread
    talks to Spark over its own py4j connection, and neither is the control thread."""

    def __init__(self, board: JobBoard) -> None:
        self.board = board
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()
        self._readers: dict[JobFeed, _FeedReader] = {}
        #: A parser per Connect server's stage source (by the source's id).
        self._parsers: dict[int, _FiguresParser] = {}
        #: When the last finished poll started, and a condition notified after each.
        self._last_poll_started = float("-inf")
        self._polled = threading.Condition()

    def fresh_snapshot(self, timeout: float = 3.0) -> BoardSnapshot:
        """The board as read by a poll that started after this call: what a magic shows
        is never older than the magic (the poll is made at once). The latest one when
        the poller does not run, or after ``timeout``."""
        asked = time.monotonic()
        if self.is_running():
            self.board.wake_now()
            with self._polled:
                self._polled.wait_for(lambda: self._last_poll_started >= asked, timeout)
        return self.board.snapshot()

    def start(self) -> None:
        """Start the threads (idempotent)."""
        with self._start_lock:
            if self._threads and all(t.is_alive() for t in self._threads):
                return
            self._stopping.clear()
            self._threads = [
                threading.Thread(target=self._run, name="jss-job-board", daemon=True),
                threading.Thread(target=self._run_cancels, name="jss-job-cancel", daemon=True),
            ]
            for thread in self._threads:
                thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the threads and wait up to ``timeout`` for each (kernel shutdown)."""
        self._stopping.set()
        self.board.wake_now()
        self.board.cancel_ready.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def is_running(self) -> bool:
        """Whether any of its threads still runs."""
        return any(thread.is_alive() for thread in self._threads)

    def _run_cancels(self) -> None:
        ready = self.board.cancel_ready
        while not self._stopping.is_set():
            ready.wait()
            ready.clear()
            self._send_cancels()

    def _run(self) -> None:
        config = self.board.config
        while not self._stopping.is_set():
            self.board.clear_wake()
            polled_at = time.monotonic()
            try:
                self.poll_once()
            except Exception as exc:  # the JVM went away, a py4j hiccup: report, go on
                log.debug("job board poll failed", exc_info=True)
                self.board.update([], {}, 0, self._describe_safely(), error=_one_line(exc))
            with self._polled:
                self._last_poll_started = polled_at
                self._polled.notify_all()
            interval = config.poll_interval if self.board.busy() else config.idle_poll_interval
            if self.board.queries.any_active():  # their figures move every second
                interval = min(interval, QUERY_POLL_INTERVAL)
            if self.board.winding_down_cancel():
                interval = min(interval, CANCEL_POLL_INTERVAL)
            self._wait(polled_at, interval)

    def _wait(self, polled_at: float, interval: float) -> None:
        # Until the interval is over or an urgent wake. A cell that started or ended
        # brings the next poll to one fast interval from then at the latest: its jobs
        # show within that, and a short cell does not wait for a poll made beside it.
        board = self.board
        deadline = polled_at + interval
        while (remaining := deadline - time.monotonic()) > 0:
            if not board.wake.wait(remaining) or board.take_wake():
                return
            deadline = min(deadline, time.monotonic() + board.config.poll_interval)

    def poll_once(self) -> BoardSnapshot:
        """One round: queued cancels, then fresh status, then the cancels it called
        for (jobs newly seen in cancelled groups). Also callable from tests."""
        self._send_cancels()
        backends = self._backends()
        # Stopped sessions whose groups still run are read too (not shown as sessions; a
        # name registered again is followed through its new session).
        followed = {**self.board.retiring(), **backends}
        # Asked once per round: a classic backend's answer costs a JVM round trip.
        feed_of = {name: backend.job_feed() for name, backend in followed.items()}
        feeds: list[JobFeed] = []
        for feed in feed_of.values():
            if feed is not None and all(feed is not f for f in feeds):
                feeds.append(feed)
        by_spark_tag = {b.spark_session_tag: n for n, b in followed.items() if b.spark_session_tag}
        self._readers = {feed: self._readers.get(feed) or _FeedReader(feed) for feed in feeds}
        queries = self.board.queries
        queries.refresh()
        streaming_runs = queries.run_ids()
        read: list[tuple[JobView, GroupKey | None]] = []
        each_figures: list[Mapping[int, StageFigures]] = []
        slots: dict[str, int] = {}
        for feed in feeds:
            reader = self._readers[feed]
            read += reader.read(self.board.settling_job_ids(), by_spark_tag, streaming_runs)
            each_figures.append(reader.stage_figures())
            slots.update(feed.executor_slots())
        # One context per process: its figures as they are (parsed only when asked).
        figures: Mapping[int, StageFigures] = (
            each_figures[0]
            if len(each_figures) == 1
            else {k: v for m in each_figures for k, v in m.items()}
        )
        servers = self._read_servers(followed)
        jobs = [view for view, _ in read]
        keys = {view.id: key for view, key in read if key is not None}
        running = [key for view, key in read if view.status == "RUNNING"]
        sessions = []
        for name in backends:
            count = None
            if feed_of[name] is not None:
                count = sum(1 for key in running if key is not None and key[0] == name)
            try:
                sessions.append(self.board.sessions.describe(name, count))
            except UnknownSessionError:
                continue  # stopped during this poll: its jobs are still recorded below
        snapshot = self.board.update(
            [j for j in jobs if j.id in keys],
            keys,
            running.count(None),
            sessions,
            stages=StagesRead(figures, slots, servers) if feeds or servers else None,
        )
        self._send_cancels()
        return snapshot

    def _read_servers(self, followed: Mapping[str, SessionBackend]) -> dict[str, StagesRead]:
        """Each Connect session's stages, read from its server's UI (one read per
        server), by session name."""
        sources: dict[str, StageSource] = {}
        for name, backend in followed.items():
            source = backend.stage_source()
            if source is not None:
                sources[name] = source
        wanted: dict[int, tuple[StageSource, set[int], set[int]]] = {}
        for name, source in sources.items():
            _, running, ended = wanted.setdefault(id(source), (source, set(), set()))
            of_running, of_ended = self.board.operation_stage_ids(name)
            running |= of_running
            ended |= of_ended
        reads: dict[int, StagesRead] = {}
        for key, (source, running, ended) in wanted.items():
            source.refresh(running, ended - running)
            parser = self._parsers.get(key) or _FiguresParser()
            self._parsers[key] = parser
            reads[key] = StagesRead(parser.parse(source.stage_figures()), source.executor_slots())
        self._parsers = {k: p for k, p in self._parsers.items() if k in reads}
        return {name: reads[id(source)] for name, source in sources.items()}

    def _send_cancels(self) -> None:
        for cancel in self.board.take_pending_cancels():
            try:
                cancel.send()
            except Exception:
                log.warning("cancelling jobs of session %r failed", cancel.session, exc_info=True)

    def _backends(self) -> dict[str, SessionBackend]:
        found = {}
        for name in self.board.sessions.names():
            try:
                found[name] = self.board.sessions.backend(name)
            except UnknownSessionError:
                continue  # stopped while we looked
        return found

    def _describe_safely(self) -> list[SessionView]:
        views = []
        for name in self.board.sessions.names():
            try:
                views.append(self.board.sessions.describe(name, 0))
            except Exception:  # the JVM is gone: show what is known without it
                continue
        return views


#: Parsed figures of stages the feed no longer has, kept until there are this many.
_PARSED_SLACK = 100


class _FiguresParser:
    """Parses a source's stage figures on first use, once per change: a stage's data is
    a new dict only when it changed (``JobFeed.stage_figures``,
    ``StageSource.stage_figures``). Most changed stages are never looked at (a streaming
    query's ten a second: no group shows them), so none is parsed before it is asked."""

    def __init__(self) -> None:
        self._parsed: _Parsed = {}

    def parse(self, fed: Mapping[int, dict[str, Any]]) -> Mapping[int, StageFigures]:
        # The feed let them go: so do we, a batch at a time (a 2,000-stage job kept
        # a second 2,000 here, 4 MB, after the next one).
        if len(self._parsed) > len(fed) + _PARSED_SLACK:
            self._parsed = {i: p for i, p in self._parsed.items() if i in fed}
        return _ParsedFigures(fed, self._parsed)


_Parsed = dict[int, tuple[dict[str, Any], StageFigures]]


class _ParsedFigures(Mapping[int, StageFigures]):
    def __init__(self, fed: Mapping[int, dict[str, Any]], parsed: _Parsed) -> None:
        self._fed, self._parsed = fed, parsed

    def __getitem__(self, stage_id: int) -> StageFigures:
        data = self._fed[stage_id]
        before = self._parsed.get(stage_id)
        if before is None or before[0] is not data:
            before = self._parsed[stage_id] = (data, parse_stage_figures(data))
        return before[1]

    def __iter__(self) -> Iterator[int]:
        return iter(self._fed)

    def __len__(self) -> int:
        return len(self._fed)


class _FeedReader:
    """Reads one feed into ``JobView``s and their groups, reusing last poll's view of a
    job whose data Spark reports unchanged (a long task moves no count). Parsing is most
    of a poll's Python time, and the board compares reused views by identity, so its
    unchanged groups cost nothing either."""

    def __init__(self, feed: JobFeed) -> None:
        self._feed = feed
        self._by_spark_tag: Mapping[str, str] = {}
        #: job id -> (its data, its running stages' data, view, group) at the last poll.
        self._last: dict[int, tuple[dict[str, Any], tuple[Any, ...], JobView, GroupKey | None]]
        self._last = {}
        self._figures = _FiguresParser()

    def stage_figures(self) -> Mapping[int, StageFigures]:
        """The feed's stage figures, parsed when asked (once per change)."""
        return self._figures.parse(self._feed.stage_figures())

    def read(
        self, also: list[int], by_spark_tag: Mapping[str, str], streaming_runs: frozenset[str]
    ) -> list[tuple[JobView, GroupKey | None]]:
        # A streaming query's micro-batch jobs (their job group is its run id) are the
        # query's, shown by its figures: never a group per batch, nor a cell's jobs.
        fed = [d for d in self._feed.poll(also) if d.get("jobGroup") not in streaming_runs]
        running = {int(d["jobId"]) for d in fed if status_is_running(str(d.get("status", "")))}
        wanted = {int(s) for d in fed if int(d["jobId"]) in running for s in d.get("stageIds", ())}
        stage_data = {}
        if wanted:
            stage_data = {int(d["stageId"]): d for d in self._feed.running_stages(wanted)}
        if by_spark_tag != self._by_spark_tag:  # a session came or went: regroup
            self._by_spark_tag, self._last = dict(by_spark_tag), {}
        last, self._last = self._last, {}
        read = []
        for data in fed:
            job_id = int(data["jobId"])
            stages: tuple[Any, ...] = ()
            if job_id in running:
                stages = tuple(stage_data[s] for s in data.get("stageIds", ()) if s in stage_data)
            before = last.get(job_id)
            if before is not None and before[0] == data and before[1] == stages:
                view, key = before[2], before[3]
            else:
                view = parse_job(data, tuple(map(parse_stage, stages)))
                key = job_group(data, by_spark_tag)
            self._last[job_id] = (data, stages, view, key)
            read.append((view, key))
        return read


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"Spark status unavailable: {text[0] if text else type(exc).__name__}"

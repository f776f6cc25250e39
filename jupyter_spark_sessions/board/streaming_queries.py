"""The streaming queries of the managed sessions, as the board shows them.

A query is recorded when it starts (``backends/streaming_calls`` reports every
``DataStreamWriter.start``/``toTable`` of a managed session, from a cell, a thread or
another query's ``foreachBatch``), with the cell that started it. The board's producer
thread reads each active query's state (``refresh``: ``isActive``, ``lastProgress``,
``exception``; a few py4j or gRPC calls per query, at most once a second) and keeps,
per query, its latest figures and a short history of its rates for the views' chart.

The input rate shown is the board's own, not Spark's: Spark's ``inputRowsPerSecond`` is
one batch's rows over the time since the trigger before it, and that trigger may have
found no data and run no batch (a rate source of 50 rows/s makes a batch a second, its
offsets being whole seconds; with the default trigger the query checks for data every
few milliseconds in between, so its batches read 5,000 rows/s). The board keeps the
progress reports it read and divides the rows of those of the last ``RATE_WINDOW``
seconds by the time they span (``input_rate``): the rate a person would measure.

Stopping is a request, as a cancel is (the Beam seed's shape): ``request_stop`` marks
the query "stopping" and calls ``stop()`` on a thread of its own, returning at once; the
state the views show after that is the one Spark reports ("stopped", or "failed" with
the error's first line). The records are bounded: every active query, and the last
``RETAINED_ENDED`` ended ones; each query's history keeps ``HISTORY_POINTS`` points,
however long it runs.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import job_tags
from ..errors import UnknownQueryError
from .snapshot import QueryView

log = logging.getLogger(__name__)

#: Ended queries the board keeps (the oldest go first).
RETAINED_ENDED = 20
#: Seconds each point of a query's rate history stands for (the latest figures seen in
#: that span), and how many points it keeps: the last five minutes, whatever the rate
#: of batches (the board's size stays the same after an hour as after five minutes).
HISTORY_STEP = 5.0
HISTORY_POINTS = 60
#: Seconds of progress reports the input rate is measured over (``input_rate``), and the
#: reports a query keeps for it (the board reads one a second at most).
RATE_WINDOW = 30.0
RATE_SAMPLES = 64
#: Seconds between two reads of the active queries' state.
REFRESH_SECONDS = 1.0
#: Reads in a row that must fail before a query is taken for gone with its driver: one
#: can fail while py4j cleans up after an Interrupt (``backends/driver``).
FAILED_READS_GONE = 3


@dataclass
class QueryRecord:
    """What the board remembers of one query run."""

    query: Any  # PySpark's StreamingQuery (classic or Spark Connect)
    id: str
    run_id: str
    name: str
    session: str
    started_by: str  # the group id of the cell that started it ("a:5"), or ""
    started_at: float
    started_count: int | None = None  # that cell's execution count
    state: str = "active"  # active | stopping | stopped | failed
    error: str = ""
    stop_source: str | None = None
    ended_at: float | None = None
    batch_id: int | None = None
    input_rows: int = 0
    input_rate: float | None = None
    process_rate: float | None = None
    batch_ms: int | None = None
    message: str = ""
    #: Its last reads failed: the driver or server is gone (a restart names it lost).
    unreachable: bool = False
    failed_reads: int = 0  # in a row
    history: collections.deque[tuple[float, float, float]] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY_POINTS)
    )
    #: The progress reports read for the input rate: (batch id, its trigger's time in
    #: seconds, its rows), oldest first (``input_rate``).
    samples: collections.deque[tuple[int, float, int]] = field(
        default_factory=lambda: collections.deque(maxlen=RATE_SAMPLES)
    )
    #: (batch id, Spark's timestamp) of the last report read: an idle query's report
    #: carries the id its next batch will have, so the id alone does not tell them apart.
    last_report: tuple[int, str] | None = None

    @property
    def ended(self) -> bool:
        return self.state in ("stopped", "failed")

    def view(self) -> QueryView:
        return QueryView(
            id=self.id,
            run_id=self.run_id,
            name=self.name,
            session=self.session,
            state=self.state,
            error=self.error,
            started_by=self.started_by,
            started_at=self.started_at,
            ended_at=self.ended_at,
            batch_id=self.batch_id,
            input_rows=self.input_rows,
            input_rate=self.input_rate,
            process_rate=self.process_rate,
            batch_duration_ms=self.batch_ms,
            message=self.message,
            stop_source=self.stop_source,
            history=tuple(self.history),
        )


class StreamingQueries:
    """The managed sessions' queries: recorded at start, read by the producer, stopped
    on request. Thread-safe; Spark calls happen only in ``refresh`` (the producer's
    thread) and on each stop's own thread."""

    def __init__(
        self, wake: Callable[[], None] = lambda: None, clock: Callable[[], float] = time.time
    ) -> None:
        self._clock = clock  # wall-clock seconds (tests run an hour of batches at once)
        #: Told of each query as it starts, in the thread that started it.
        self.on_start: Callable[[QueryView], None] | None = None
        self._lock = threading.Lock()
        self._records: dict[str, QueryRecord] = {}  # by run id, oldest first
        self._wake = wake
        self._last_refresh = float("-inf")

    # -- what starts and stops tell it ---------------------------------------------------

    def started(self, query: Any, session: str, cell: int | None) -> None:
        """A query of ``session`` started, in the cell ``cell`` (its execution count;
        None for a thread's)."""
        run_id = str(query.runId)
        record = QueryRecord(
            query=query,
            id=str(query.id),
            run_id=run_id,
            name=str(query.name or ""),
            session=session,
            started_by=job_tags.group_id(session, cell) if cell is not None else "",
            started_at=self._clock(),
            started_count=cell,
        )
        with self._lock:
            self._records[run_id] = record
        if self.on_start is not None:  # the cell's view (cells/query_views), this thread
            self.on_start(record.view())
        self._wake()

    def request_stop(self, name_or_id: str, source: str | None = None) -> QueryView:
        """Ask Spark to stop a query (by name, id or run id) and return at once; it shows
        "stopping" until Spark reports it ended. UnknownQueryError (nothing done) for a
        query the board does not know or that already ended."""
        record = self.find(name_or_id)
        with self._lock:
            if record.ended:
                raise UnknownQueryError(
                    f"Streaming query {_label(record)} already {record.state}: nothing to stop."
                )
            if record.state == "stopping":
                return record.view()
            record.state, record.stop_source = "stopping", source
        threading.Thread(
            target=self._stop, args=(record,), name="jss-stop-query", daemon=True
        ).start()
        self._wake()
        return record.view()

    def request_stop_session(self, session: str, source: str | None = None) -> list[str]:
        """Stop every active query of ``session`` (as ``request_stop``); their labels."""
        with self._lock:
            active = [r for r in self._records.values() if r.session == session and not r.ended]
        return [_label(self.request_stop(r.run_id, source)) for r in active if r.state == "active"]

    def _stop(self, record: QueryRecord) -> None:
        try:
            record.query.stop()
        except Exception as exc:  # the session or its server went away: say it
            with self._lock:
                record.error = record.error or _first_line(exc)
        self._last_refresh = float("-inf")  # observe the end at the next poll
        self._wake()

    def lose(self, sessions: list[str], why: str) -> list[str]:
        """The queries of ``sessions`` that had not ended (or whose driver stopped
        answering), now failed with ``why``: their driver is gone, so no Spark call.
        Their labels with their session ("'rates' of a")."""
        lost = []
        with self._lock:
            for record in self._records.values():
                if record.session in sessions and (not record.ended or record.unreachable):
                    record.state, record.error, record.unreachable = "failed", why, False
                    record.ended_at = record.ended_at or self._clock()
                    lost.append(f"{_label(record)} of {record.session}")
        self._wake()
        return lost

    # -- what the producer reads ---------------------------------------------------------

    def any_active(self) -> bool:
        with self._lock:
            return any(not r.ended for r in self._records.values())

    def run_ids(self) -> frozenset[str]:
        """Run ids of the queries recorded (their micro-batch jobs' job group)."""
        with self._lock:
            return frozenset(self._records)

    def refresh(self, force: bool = False) -> None:
        """Read each active query's state from Spark (the producer's thread), at most
        every ``REFRESH_SECONDS`` unless ``force``."""
        now = time.monotonic()
        if not force and now - self._last_refresh < REFRESH_SECONDS:
            return
        self._last_refresh = now
        with self._lock:
            active = [r for r in self._records.values() if not r.ended]
        for record in active:
            try:
                _read(record, self._clock())
                record.failed_reads = 0
            except Exception as exc:  # its driver or server went away, or a py4j hiccup
                record.failed_reads += 1
                if record.failed_reads < FAILED_READS_GONE:
                    continue  # a call an Interrupt's clean-up broke: read it again
                with self._lock:
                    record.state, record.ended_at = "failed", self._clock()
                    record.error = record.error or (
                        f"its Spark driver or server did not answer ({_first_line(exc)})"
                    )
                    record.unreachable = True
        self._retain()

    def _retain(self) -> None:
        with self._lock:
            ended = [k for k, r in self._records.items() if r.ended]
            for key in ended[: max(0, len(ended) - RETAINED_ENDED)]:
                del self._records[key]

    # -- views -----------------------------------------------------------------------------

    def views(self) -> tuple[QueryView, ...]:
        with self._lock:
            return tuple(r.view() for r in self._records.values())

    def active_count(self, session: str) -> int:
        with self._lock:
            return sum(1 for r in self._records.values() if r.session == session and not r.ended)

    def session_of_run(self, run_id: str | None) -> str | None:
        """The session of the query run ``run_id`` (None when unknown)."""
        with self._lock:
            record = self._records.get(run_id or "")
            return record.session if record else None

    def of_object(self, query: object) -> QueryRecord | None:
        """The record of this very query object (no Spark call: safe in a signal handler)."""
        with self._lock:
            return next((r for r in self._records.values() if r.query is query), None)

    def find(self, name_or_id: str) -> QueryRecord:
        """The query named ``name_or_id`` (its name, id or run id; the latest run of a
        name or id); UnknownQueryError in one line when there is none."""
        with self._lock:
            records = list(self._records.values())
        for record in reversed(records):
            if name_or_id in (record.run_id, record.id, record.name or None):
                return record
        known = ", ".join(_label(r) for r in records if not r.ended) or "none running"
        raise UnknownQueryError(f"No streaming query {name_or_id!r} in this kernel ({known}).")


def _read(record: QueryRecord, now: float) -> None:
    """One read of a query's state from Spark into its record."""
    query = record.query
    active = bool(query.isActive)
    progress = query.lastProgress
    if progress is not None:
        batch = int(progress.batchId)
        stamp = str(getattr(progress, "timestamp", None) or "")
        if (batch, stamp) != record.last_report:
            record.last_report = (batch, stamp)
            record.batch_id = batch
            record.input_rows = int(progress.numInputRows or 0)
            at = _seconds(stamp)
            _add_sample(record.samples, (batch, now if at is None else at, record.input_rows))
            record.input_rate = input_rate(record.samples)
            record.process_rate = _rate(progress.processedRowsPerSecond)
            duration = (progress.durationMs or {}).get("triggerExecution")
            record.batch_ms = int(duration) if duration is not None else None
            _add_point(record, now)
    if active:
        try:
            record.message = str(query.status.get("message", ""))
        except Exception:
            record.message = ""
        return
    error = query.exception()
    record.ended_at = record.ended_at or now
    if error is not None:
        record.state, record.error = "failed", _first_line(error)
    else:
        record.state = "stopped"
    record.message = ""


def input_rate(
    samples: Sequence[tuple[int, float, int]], window: float = RATE_WINDOW
) -> float | None:
    """Rows a second that arrived over the last ``window`` seconds of a query's progress
    reports ((batch id, trigger time, rows), oldest first): the rows of the reports in
    that span over the time from the first of them to the last (None before two reports
    a moment apart). A batch's rows arrived since the trigger before it, so the first
    report's rows are not counted. A report that follows a gap in the batch ids stands for
    the batches the board did not read (it reads one report a second) with its own
    rows; a query whose batches are sparser than ``window`` is measured over its last
    two reports."""
    if len(samples) < 2:
        return None
    newest = samples[-1][1]
    first = next(i for i, sample in enumerate(samples) if sample[1] >= newest - window)
    first = min(first, len(samples) - 2)
    span = newest - samples[first][1]
    if span <= 0:
        return None
    rows = sum(
        count * max(1, batch - before)
        for (before, _, _), (batch, _, count) in itertools.pairwise(
            itertools.islice(samples, first, None)
        )
    )
    return round(rows / span, 3)


def _add_sample(
    samples: collections.deque[tuple[int, float, int]], sample: tuple[int, float, int]
) -> None:
    """One more report; those no longer needed for ``input_rate`` go."""
    samples.append(sample)
    while len(samples) > 2 and samples[1][1] < sample[1] - RATE_WINDOW:
        samples.popleft()


def _seconds(stamp: str) -> float | None:
    """Spark's progress timestamp (``2026-12-06T02:49:39.786Z``) in epoch seconds."""
    if not stamp:
        return None
    try:  # Python 3.10's fromisoformat does not read "Z"
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _add_point(record: QueryRecord, now: float) -> None:
    """The latest rates into the history's point of their ``HISTORY_STEP`` span."""
    span = now - now % HISTORY_STEP
    point = (span, round(record.input_rate or 0.0, 1), round(record.process_rate or 0.0, 1))
    if record.history and record.history[-1][0] == span:
        record.history[-1] = point
    else:
        record.history.append(point)


def _rate(value: Any) -> float | None:
    try:
        return round(float(value), 3)
    except (TypeError, ValueError):
        return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines() or [type(error).__name__])[0][:300]


def _label(query: QueryRecord | QueryView) -> str:
    return repr(query.name) if query.name else query.id

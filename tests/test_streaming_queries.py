"""The board's record of streaming queries (board/streaming_queries), with stand-ins for
PySpark's query objects (pure logic: the real queries are tests/test_streaming_kernel.py's):
an hour of batches keeps a bounded record, ended queries are kept to a few, a stop is a
request that returns at once, and the state shown after it is the one Spark reports."""

from __future__ import annotations

import datetime
import json
import threading
import uuid
from dataclasses import asdict
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_spark_sessions.board.streaming_queries import (
    FAILED_READS_GONE,
    HISTORY_POINTS,
    HISTORY_STEP,
    RATE_WINDOW,
    RETAINED_ENDED,
    StreamingQueries,
    input_rate,
)
from jupyter_spark_sessions.errors import UnknownQueryError


class FakeQuery:
    """What the board reads of a PySpark StreamingQuery."""

    def __init__(self, name: str = "") -> None:
        self.id, self.runId, self.name = str(uuid.uuid4()), str(uuid.uuid4()), name
        self.isActive = True
        self.lastProgress: Any = None
        self.status = {"message": "Waiting for next trigger"}
        self.error: BaseException | None = None
        self.stop_called = threading.Event()
        self.release = threading.Event()  # stop() returns when set
        self.release.set()

    def batch(self, batch_id: int) -> None:
        self.lastProgress = SimpleNamespace(
            batchId=batch_id,
            numInputRows=10,
            inputRowsPerSecond=100.0,
            processedRowsPerSecond=120.5,
            durationMs={"triggerExecution": 42},
        )

    def report(self, batch_id: int, at: float, rows: int, spark_rate: float = 0.0) -> None:
        """Spark's progress report of a batch that started at ``at`` (epoch seconds)."""
        stamp = datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat()
        self.lastProgress = SimpleNamespace(
            batchId=batch_id,
            timestamp=stamp.replace("+00:00", "Z"),
            numInputRows=rows,
            inputRowsPerSecond=spark_rate,
            processedRowsPerSecond=1_000.0,
            durationMs={"triggerExecution": 50},
        )

    def exception(self) -> BaseException | None:
        return self.error

    def stop(self) -> None:
        self.stop_called.set()
        self.release.wait(10)
        self.isActive = False


def size_of(queries: StreamingQueries) -> int:
    return len(json.dumps([asdict(v) for v in queries.views()]))


def test_an_hour_at_ten_batches_a_second_keeps_a_bounded_record() -> None:
    clock = [1_800_000_000.0]
    queries, query = StreamingQueries(clock=lambda: clock[0]), FakeQuery("hourly")
    queries.started(query, "a", 3)
    sizes = {}
    for batch in range(36_000):  # a refresh per batch: more than the board makes
        clock[0] += 0.1
        query.batch(batch)
        queries.refresh(force=True)
        if batch in (100, 600, 3_000, 35_999):  # 10 s, 1 min, 5 min, an hour
            sizes[batch] = size_of(queries)
    (view,) = queries.views()
    assert view.batch_id == 35_999 and view.batch_duration_ms == 42
    assert len(view.history) == HISTORY_POINTS
    # The last five minutes, a point every HISTORY_STEP seconds, the newest last.
    assert view.history[-1][0] - view.history[0][0] == (HISTORY_POINTS - 1) * HISTORY_STEP
    assert sizes[600] <= 2 * sizes[100], sizes
    assert sizes[35_999] <= sizes[3_000] + 20, sizes  # longer numbers only


def test_ended_queries_are_kept_to_the_newest_few() -> None:
    queries = StreamingQueries()
    for index in range(RETAINED_ENDED + 15):
        query = FakeQuery(f"q{index}")
        queries.started(query, "a", index)
        query.isActive = False
        queries.refresh(force=True)
    running = FakeQuery("still_running")
    queries.started(running, "b", None)
    queries.refresh(force=True)
    names = [v.name for v in queries.views()]
    assert len(names) == RETAINED_ENDED + 1
    assert names[0] == "q15" and names[-1] == "still_running"


def test_a_stop_request_returns_at_once_and_shows_what_spark_reports() -> None:
    woken = threading.Event()
    queries, query = StreamingQueries(wake=woken.set), FakeQuery("slow")
    queries.started(query, "a", 2)
    query.release.clear()  # Spark takes its time to stop it
    view = queries.request_stop("slow", "sidebar")
    assert view.state == "stopping" and view.stop_source == "sidebar"
    assert query.stop_called.wait(5)
    queries.refresh(force=True)
    assert queries.find("slow").state == "stopping"  # Spark says it is still active
    # Asked again meanwhile: the same request, not a second stop.
    assert queries.request_stop(query.id).state == "stopping"
    query.release.set()
    for _ in range(100):
        queries.refresh(force=True)
        if queries.find("slow").state != "stopping":
            break
        threading.Event().wait(0.05)
    assert queries.find("slow").state == "stopped" and woken.is_set()
    with pytest.raises(UnknownQueryError, match="already stopped"):
        queries.request_stop("slow")


def test_a_failed_query_says_why_in_one_line() -> None:
    queries, query = StreamingQueries(), FakeQuery()
    queries.started(query, "a", None)
    query.isActive = False
    query.error = RuntimeError("[STREAM_FAILED] Query terminated with exception\n\tat org...")
    queries.refresh(force=True)
    (view,) = queries.views()
    assert view.state == "failed" and view.started_by == ""
    assert view.error == "[STREAM_FAILED] Query terminated with exception"


def test_an_unknown_query_is_one_line_naming_the_running_ones() -> None:
    queries = StreamingQueries()
    queries.started(FakeQuery("rates"), "a", 1)
    with pytest.raises(UnknownQueryError) as raised:
        queries.request_stop("nope")
    assert str(raised.value) == "No streaming query 'nope' in this kernel ('rates')."


def test_a_session_stop_asks_for_each_of_its_active_queries_only() -> None:
    queries = StreamingQueries()
    mine, other = FakeQuery("mine"), FakeQuery("other")
    queries.started(mine, "a", 1)
    queries.started(other, "b", 1)
    assert queries.request_stop_session("a", "cancel") == ["'mine'"]
    assert mine.stop_called.wait(5) and not other.stop_called.is_set()


class BrokenQuery(FakeQuery):
    """A query whose reads fail (``failures`` of them, or all)."""

    def __init__(self, failures: int | None = None) -> None:
        super().__init__("flaky")
        self.failures = failures

    @property  # type: ignore[override]
    def isActive(self) -> bool:
        if self.failures is None or self.failures > 0:
            self.failures = None if self.failures is None else self.failures - 1
            raise ConnectionError("Error while sending or receiving")
        return True

    @isActive.setter
    def isActive(self, value: bool) -> None:
        pass


def test_a_failed_read_is_read_again_and_a_driver_gone_for_good_fails_the_query() -> None:
    queries, hiccup = StreamingQueries(), BrokenQuery(failures=1)
    queries.started(hiccup, "a", 1)
    queries.refresh(force=True)  # py4j's clean-up after an Interrupt broke this read
    assert queries.find("flaky").state == "active"
    queries.refresh(force=True)
    assert queries.find("flaky").state == "active"

    queries, gone = StreamingQueries(), BrokenQuery()
    queries.started(gone, "a", 1)
    for _ in range(FAILED_READS_GONE):
        queries.refresh(force=True)
    (view,) = queries.views()
    assert view.state == "failed", view
    assert view.error == (
        "its Spark driver or server did not answer (Error while sending or receiving)"
    )
    # A restart then names it lost with its driver.
    assert queries.lose(["a"], "lost with its Spark driver") == ["'flaky' of a"]
    assert queries.find("flaky").error == "lost with its Spark driver"


# ---- the input rate -------------------------------------------------------------------

START = 1_800_000_000.0


def rate_after(reports: list[tuple[int, float, int]], query: FakeQuery | None = None) -> float:
    """The input rate the board shows after reading ``reports`` ((batch id, seconds after
    START, rows)), one read each."""
    queries, query = StreamingQueries(clock=lambda: START), query or FakeQuery("rates")
    queries.started(query, "a", 1)
    for batch, at, rows in reports:
        query.report(batch, START + at, rows, spark_rate=5_000.0)
        queries.refresh(force=True)
    rate = queries.find("rates").input_rate
    assert rate is not None
    return rate


def test_a_steady_source_reads_its_rate_not_the_rate_of_one_batch_after_a_gap() -> None:
    # A rate source of 50 rows/s makes a batch a second (its offsets are whole seconds);
    # Spark's own figure for each is 50 rows over the few ms since an empty trigger.
    steady = [(batch, batch + 0.003 * (batch % 3), 50) for batch in range(1, 12)]
    assert 49.0 <= rate_after(steady) <= 51.0
    # Read while it ran much longer: the last RATE_WINDOW seconds count.
    long_run = [(0, 0.0, 0)] + [(b, float(b), 500 if b < 100 else 50) for b in range(1, 200)]
    assert rate_after(long_run) == 50.0


def test_batches_the_board_did_not_read_count_with_the_one_it_read() -> None:
    # Ten batches a second of 10 rows, read once a second: 9 of 10 reports are never seen.
    read_once_a_second = [(batch, batch / 10, 10) for batch in range(0, 200, 10)]
    assert rate_after(read_once_a_second) == 100.0


def test_an_idle_query_reads_a_falling_rate_and_a_burst_after_a_gap_its_share() -> None:
    # Spark reports an idle query every 10 s with the id its next batch will have.
    reports = [(b, float(b), 50) for b in range(1, 11)]
    reports += [(11, 20.0, 0), (11, 30.0, 0)]  # idle since 10 s
    # The rows of batches 2-10 over the 29 s from batch 1 to the last report.
    assert rate_after(reports) == round(50 * 9 / 29, 3)
    # Then 600 rows at once, in the batch that takes the idle reports' id: the rows
    # since batch 1 over the RATE_WINDOW seconds since, not Spark's 5,000 rows/s.
    reports += [(11, 31.0, 600)]
    assert rate_after(reports) == round((50 * 9 + 600) / RATE_WINDOW, 3)


def test_the_rate_needs_two_reports_a_moment_apart() -> None:
    assert input_rate([]) is None
    assert input_rate([(3, 10.0, 50)]) is None
    assert input_rate([(3, 10.0, 50), (3, 10.0, 50)]) is None
    # Batches sparser than the window: the last two reports.
    assert input_rate([(1, 0.0, 60), (2, 60.0, 60), (3, 120.0, 120)]) == 2.0

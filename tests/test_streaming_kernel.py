"""Streaming queries are a session's work too (issue 36), through a real kernel on
local[2] (sessions a and b) and the local Spark Connect server (session c): a query
shows on the board with a rising batch id, under its session and the cell that started
it, its micro-batch jobs never as groups; a stop request returns at once and the board
shows the query stopped while b's keeps running; `cancel --session` stops a session's
queries; the kernel's Interrupt ends a wait on a query in one line; the board stays
bounded however long a query runs; starting a query prints no JVM warning."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from e2e.waiting import wait_until
from test_job_board_kernel import board, request

from jupyter_spark_sessions.board.streaming_queries import HISTORY_POINTS
from kernel_driver import CellResult, Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

#: A rate source (a batch a second at most: its offsets are whole seconds), into a memory sink.
RATE_QUERY = (
    "spark.readStream.format('rate').option('rowsPerSecond', {rows})"
    ".option('numPartitions', 1).load()"
    ".writeStream.format('memory').queryName('{name}')"
    ".trigger(processingTime='{trigger}').start()"
)
#: A batch every 100 ms whatever the clock (the rate source's offsets are whole seconds:
#: it makes one batch a second at most).
FAST_QUERY = (
    "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 10)"
    ".option('numPartitions', 1).load()"
    ".writeStream.format('memory').queryName('long_b')"
    ".trigger(processingTime='100 milliseconds').start()"
)
STOP_ALL = (
    "for _name in __import__('jupyter_spark_sessions').default_registry().names():\n"
    "    for _q in __import__('jupyter_spark_sessions').default_registry()"
    ".session(_name).streams.active:\n"
    "        _q.stop()"
)


def start(
    kernel: Kernel, session: str, name: str, rows: int = 5, trigger: str = "100 milliseconds"
) -> CellResult:
    query = RATE_QUERY.format(rows=rows, name=name, trigger=trigger)
    return kernel.ok(f"%%spark_session {session}\nq_{name} = {query}")


def query_on_board(kernel: Kernel, name: str) -> dict[str, Any]:
    found = [q for q in board(kernel)["queries"] if q["name"] == name]
    assert found, board(kernel)["queries"]
    return found[-1]


def wait_for_query(kernel: Kernel, name: str, check: Any, timeout: float = 10) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def matches() -> bool:
        found = [q for q in board(kernel)["queries"] if q["name"] == name]
        if not found:  # not started yet (a cell still running starts it)
            return False
        seen.update(found[-1])
        return bool(check(seen))

    wait_until(matches, timeout, 0.2)
    return seen


@pytest.fixture(scope="module")
def streams(kernel: Kernel) -> Iterator[Kernel]:
    kernel.ok(
        "%spark_session create a\n%spark_session create b\n%spark_session create c --remote local",
        timeout=240,
    )
    # Runs for the whole module: its board size is compared at 10 s and at 60 s.
    kernel.ok(f"%%spark_session b\nq_long_b = {FAST_QUERY}")
    kernel.ok("import time as _time\n_long_started = _time.monotonic()")
    yield kernel
    kernel.ok(STOP_ALL)


#: What the board holds for long_b, measured early (at 10 s or soon after).
SIZES: dict[str, tuple[int, int, int]] = {}


def long_query_share_of_the_board(kernel: Kernel) -> tuple[int, int, int]:
    """What the board holds for long_b, in JSON characters: its record without its rate
    history, that history's points, and session b's groups with the count of jobs
    outside managed sessions (the micro-batch jobs would land in one of those)."""
    shown = board(kernel)
    record = dict(next(q for q in shown["queries"] if q["name"] == "long_b"))
    points = len(record.pop("history"))
    groups = [g for g in shown["groups"] if g["session"] == "b"]
    return len(json.dumps(record)), points, len(json.dumps([groups, shown["other_running_jobs"]]))


def test_a_query_is_on_the_board_under_its_session(streams: Kernel) -> None:
    started = start(streams, "a", "rate_a")
    # Quiet: the JVM's streaming warnings do not reach the cell.
    assert started.stderr == "" and started.stdout == "", (started.stdout, started.stderr)
    first = wait_for_query(streams, "rate_a", lambda q: q["batch_id"] is not None, 5)
    later = wait_for_query(streams, "rate_a", lambda q: q["batch_id"] > first["batch_id"], 5)
    assert later["session"] == "a" and later["state"] == "active"
    assert later["started_by"] == f"a:{started.execution_count}"
    assert later["process_rate"] is not None and later["batch_duration_ms"] is not None
    assert later["history"], later
    # Its micro-batch jobs are the query's: no group per batch, none credited to the
    # cell that started it, none counted outside the managed sessions.
    shown = board(streams)
    cell_group = [g for g in shown["groups"] if g["id"] == f"a:{started.execution_count}"]
    assert all(not g["jobs"] for g in cell_group), cell_group
    assert shown["other_running_jobs"] == 0
    # `list` and `info` count a session's running queries.
    listing = streams.ok("%spark_session list").stdout.splitlines()
    row = next(line.split() for line in listing if line.startswith("a "))
    header = listing[0].split()
    assert row[header.index("queries")] == "1", listing
    # For the last test: the long query's share of the board after 10 s.
    wait_until(lambda: streams.value("_time.monotonic() - _long_started") >= 10, 30, 0.5)
    SIZES["at_10"] = long_query_share_of_the_board(streams)


def test_cancelling_the_starting_cells_group_does_not_touch_the_query(streams: Kernel) -> None:
    # The query started without the cell's job tags: a cancel of that group (here, of
    # everything tagged with it) leaves its batches alone.
    group = query_on_board(streams, "rate_a")["started_by"]
    reply, _ = request(streams, {"version": 1, "action": "cancel", "groups": [group]})
    assert reply["status"] in ("ok", "error"), reply
    time.sleep(1.5)
    before = query_on_board(streams, "rate_a")["batch_id"]
    after = wait_for_query(streams, "rate_a", lambda q: q["batch_id"] > before, 5)
    assert after["state"] == "active"


def test_a_stop_request_returns_at_once_and_spares_the_other_sessions_query(
    streams: Kernel,
) -> None:
    b_before = query_on_board(streams, "long_b")["batch_id"]
    reply, seconds = request(
        streams, {"version": 1, "action": "stop_query", "query": "rate_a", "source": "sidebar"}
    )
    assert reply["status"] == "ok" and reply["query"]["state"] == "stopping", reply
    assert seconds < 0.05, f"the stop request took {seconds * 1000:.0f} ms"
    stopped = wait_for_query(streams, "rate_a", lambda q: q["state"] == "stopped", 5)
    assert stopped["stop_source"] == "sidebar" and stopped["ended_at"], stopped
    assert streams.value("q_rate_a.isActive") is False
    b_now = wait_for_query(streams, "long_b", lambda q: q["batch_id"] > b_before, 5)
    assert b_now["state"] == "active"
    # Stopping it again, or a query nobody started, is one line and changes nothing.
    again, _ = request(streams, {"version": 1, "action": "stop_query", "query": "rate_a"})
    assert again["status"] == "error" and again["error"]["code"] == "unknown_query", again
    assert "already stopped" in again["error"]["message"]
    missing = streams.execute("%spark_session stop_query no_such_query")
    assert missing.usage_error.startswith("No streaming query 'no_such_query'"), missing.stderr


def test_cancel_session_stops_its_queries_only(streams: Kernel) -> None:
    start(streams, "a", "rate_a2")
    wait_for_query(streams, "rate_a2", lambda q: q["batch_id"] is not None, 10)
    out = streams.ok("%spark_session cancel --session a").stdout
    assert "Stopping streaming query 'rate_a2' of session 'a'." in out, out
    wait_for_query(streams, "rate_a2", lambda q: q["state"] == "stopped", 5)
    assert query_on_board(streams, "long_b")["state"] == "active"


@pytest.mark.parametrize("session", ["a", "c"])
def test_interrupt_ends_a_wait_on_a_query_in_one_line(streams: Kernel, session: str) -> None:
    name = f"waited_{session}"
    query = RATE_QUERY.format(rows=5, name=name, trigger="100 milliseconds")
    waiting = streams.client.execute(
        f"%%spark_session {session}\nq_{name} = {query}\nq_{name}.awaitTermination()"
    )
    wait_for_query(streams, name, lambda q: q["batch_id"] is not None, 20)
    assert streams.manager is not None
    interrupted = time.monotonic()
    streams.manager.interrupt_kernel()
    ended = streams.collect(waiting, timeout=30)
    took = time.monotonic() - interrupted
    assert took < 2.0, took
    assert ended.error_name == "KeyboardInterrupt", (ended.error_name, ended.traceback)
    lines = "\n".join(ended.traceback).splitlines()
    assert lines == [
        f"KeyboardInterrupt: Interrupted: streaming query '{name}' was stopped "
        "(this cell started it)."
    ], lines
    assert ended.stderr == "", ended.stderr  # no py4j or gRPC traceback
    wait_for_query(streams, name, lambda q: q["state"] == "stopped", 5)
    assert streams.ok(f"%%spark_session {session}\nspark.range(3).count()").result_text == "3"


def test_interrupt_leaves_running_a_query_another_cell_started(streams: Kernel) -> None:
    waiting = streams.client.execute("q_long_b.awaitTermination()")
    time.sleep(1.0)
    assert streams.manager is not None
    streams.manager.interrupt_kernel()
    ended = streams.collect(waiting, timeout=30)
    assert "\n".join(ended.traceback) == (
        "KeyboardInterrupt: Interrupted: stopped waiting for streaming query 'long_b', which "
        "keeps running (`%spark_session stop_query long_b` stops it)."
    ), ended.traceback
    assert query_on_board(streams, "long_b")["state"] == "active"


def test_a_failing_foreach_batch_is_one_line_on_the_board(streams: Kernel) -> None:
    streams.ok(
        "%%spark_session a\n"
        "def _explode(frame, batch):\n"
        "    if batch >= 1:\n"
        "        raise ValueError('bad batch ' + str(batch))\n"
        "q_bad = (spark.readStream.format('rate').option('rowsPerSecond', 5).load()"
        ".writeStream.foreachBatch(_explode).queryName('bad').start())"
    )
    failed = wait_for_query(streams, "bad", lambda q: q["state"] == "failed", 30)
    assert "\n" not in failed["error"] and failed["error"], failed
    assert streams.ok("%%spark_session a\nspark.range(4).count()").result_text == "4"


def test_a_thread_started_query_belongs_to_its_session(streams: Kernel) -> None:
    streams.ok(
        "import threading\n"
        "_a = __import__('jupyter_spark_sessions').default_registry().session('a')\n"
        "_t = threading.Thread(target=lambda: globals().__setitem__('q_thread', "
        "_a.readStream.format('rate').load().writeStream.format('memory')"
        ".queryName('from_thread').start()))\n"
        "_t.start(); _t.join()"
    )
    shown = wait_for_query(streams, "from_thread", lambda q: q["state"] == "active", 10)
    assert shown["session"] == "a" and shown["started_by"] == "", shown
    streams.ok("%spark_session stop_query from_thread")
    wait_for_query(streams, "from_thread", lambda q: q["state"] == "stopped", 5)


def test_the_board_stays_bounded_however_long_a_query_runs(streams: Kernel) -> None:
    # long_b has made a batch every 100 ms since the module began, while the other tests
    # ran: what the board holds for it after 150 batches against after 10 s. (An hour's
    # worth: tests/test_streaming_queries.py.)
    wait_for_query(streams, "long_b", lambda q: q["batch_id"] >= 150, 60)
    record, points, groups = long_query_share_of_the_board(streams)
    record_at_10, _, groups_at_10 = SIZES["at_10"]
    assert groups == groups_at_10, "the batches reached session b's groups"
    assert record <= record_at_10 + 20, (record, record_at_10)  # longer numbers only
    assert points <= HISTORY_POINTS

"""Streaming queries are a session's work too (issue 36), through a real kernel on
local[2] (sessions a and b) and the local Spark Connect server (session c): a query
shows on the board with a rising batch id, under its session and the cell that started
it, its micro-batch jobs never as groups; a stop request returns at once and the board
shows the query stopped while b's keeps running; `cancel --session` stops a session's
queries; the kernel's Interrupt ends a wait on a query in one line; the board stays
bounded however long a query runs; starting a query prints no JVM warning; `jobs` names
the running queries (their batches are no job groups); the input rate shown is the
source's, not Spark's figure for one batch after an empty trigger."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from e2e.waiting import wait_until
from test_job_board_kernel import board, request
from test_protocol_schema import errors

from jupyter_spark_sessions.board.streaming_queries import HISTORY_POINTS
from jupyter_spark_sessions.cells.query_views import MIME_TYPE as QUERY_MIME
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


def query_view_display(started: CellResult) -> dict[str, Any]:
    """The query view's one display in the cell that started it (a loaded machine may
    also deliver an update of it before the cell's end: not counted)."""
    (view,) = [c for k, c in started.displays if k == "display_data" and QUERY_MIME in c["data"]]
    return view


def query_on_board(kernel: Kernel, name: str) -> dict[str, Any]:
    found = [q for q in board(kernel)["queries"] if q["name"] == name]
    assert found, board(kernel)["queries"]
    return found[-1]


def poll_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Call ``condition`` every 0.2 s until it is true; fail the test naming ``what`` when
    ``timeout`` seconds passed first."""
    if not wait_until(condition, timeout, 0.2):
        raise AssertionError(f"not within {timeout} s: {what}")


def wait_for_query(kernel: Kernel, name: str, check: Any, timeout: float = 10) -> dict[str, Any]:
    """The board's record of query ``name`` once ``check`` holds for it (polled)."""
    seen: dict[str, Any] = {}

    def matches() -> bool:
        found = [q for q in board(kernel)["queries"] if q["name"] == name]
        if not found:  # not started yet (a cell still running starts it)
            return False
        seen.clear()
        seen.update(found[-1])
        return bool(check(seen))

    poll_until(matches, timeout, f"query {name!r} as asked; last seen: {seen}")
    return seen


def wait_for_board_updates(kernel: Kernel, count: int = 2) -> None:
    """Until the board has published ``count`` more snapshots (long_b's batches keep it
    publishing): what follows an event on the board has been sent by then."""
    start = board(kernel)["seq"]
    poll_until(lambda: board(kernel)["seq"] >= start + count, 10, f"{count} board updates")


def wait_until_blocked_in_a_wait(kernel: Kernel) -> None:
    """Until the main thread runs a cell that blocks in a query's wait, asked from a
    subshell (the main shell is busy)."""
    subshell = kernel.create_subshell()
    probe = (
        "import sys as _sys, threading as _threading\n"
        "from jupyter_spark_sessions.backends.streaming_calls import waited_on as _waited_on\n"
        "print(_waited_on(_sys._current_frames()[_threading.main_thread().ident]) is not None)"
    )

    def blocked() -> bool:
        sent = kernel.send_shell(
            "execute_request", {"code": probe, "store_history": False}, subshell
        )
        return kernel.collect(sent, timeout=30).stdout.strip() == "True"

    poll_until(blocked, 30, "the cell to block in awaitTermination")


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
SIZES: dict[str, int] = {}


def long_query_share_of_the_board(kernel: Kernel) -> int:
    """The size of the board's JSON for long_b: its record, session b's groups, the
    count of jobs outside managed sessions (the micro-batch jobs would land in those)."""
    shown = board(kernel)
    mine = {
        "queries": [q for q in shown["queries"] if q["name"] == "long_b"],
        "groups": [g for g in shown["groups"] if g["session"] == "b"],
        "other_running_jobs": shown["other_running_jobs"],
    }
    return len(json.dumps(mine))


#: A rate source of 50 rows/s with the default trigger: Spark checks for data every few
#: ms, finds a second's rows once a second, and reports each batch's rate over the time
#: since the empty trigger before it (some 5,000 rows/s).
STEADY_QUERY = (
    "spark.readStream.format('rate').option('rowsPerSecond', 50).option('numPartitions', 1)"
    ".load().writeStream.format('memory').queryName('steady').start()"
)
SHOWN_RATE = re.compile(r" in ([\d,.]+) rows/s \(last 30 s\) ")


def test_the_rate_shown_is_the_sources_and_jobs_names_the_running_query(
    streams: Kernel,
) -> None:
    started = streams.ok(f"%%spark_session a\nq_steady = {STEADY_QUERY}")
    try:
        view = query_view_display(started)
        display_id = view["transient"]["display_id"]

        def rates(check_from: int) -> tuple[float, float]:
            """The board's rate and the cell's, once the query ran ``check_from`` batches."""
            shown = wait_for_query(
                streams, "steady", lambda q: (q["batch_id"] or 0) >= check_from, 30
            )
            streams.ok("pass")  # reads the view's updates meanwhile
            line = query_outputs(streams, display_id)[-1]["content"]["data"]["text/plain"]
            found = SHOWN_RATE.search(line)
            assert found, line
            return float(shown["input_rate"]), float(found.group(1).replace(",", ""))

        for board_rate, cell_rate in (rates(8), rates(10)):  # a few batches, then later
            assert 40 <= board_rate <= 60 and 40 <= cell_rate <= 60, (board_rate, cell_rate)
        # Its micro-batch jobs are no job group: `jobs` says the query runs, with its batches.
        jobs = streams.ok("%spark_session jobs a").stdout
        running = [line for line in jobs.splitlines() if "streaming query" in line]
        assert len(running) == 1, jobs
        assert re.fullmatch(
            r"1 streaming query running in session 'a': 'steady' \(\d+ batches\); "
            r"`%spark_session queries a` shows its figures\.",
            running[0],
        ), running
        assert "No job groups" not in jobs, jobs
        streams.ok("%spark_session stop_query steady")
        wait_for_query(streams, "steady", lambda q: q["state"] == "stopped", 10)
        assert "streaming query" not in streams.ok("%spark_session jobs a").stdout
    finally:  # a failure above must not leave the query to the next tests
        streams.execute("q_steady.isActive and q_steady.stop()")


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
    before = query_on_board(streams, "rate_a")["batch_id"]
    reply, _ = request(streams, {"version": 1, "action": "cancel", "groups": [group]})
    # The cell's group ran no job (its query's batches are not its), so the board does
    # not list it: the request is refused in one line, and nothing is cancelled.
    assert reply["status"] == "error" and reply["error"]["code"] == "unknown_group", reply
    assert reply["error"]["message"].startswith(f"No job group '{group}' on the board"), reply
    # And Spark's cancel of everything tagged with that cell (what its Interrupt sends)
    # reaches no batch: the query runs on.
    session, count = group.split(":")
    streams.ok(
        "__import__('pyspark').SparkContext._active_spark_context.cancelJobsWithTag("
        f"__import__('jupyter_spark_sessions').job_tags.group_tag({session!r}, {count}))"
    )
    after = wait_for_query(streams, "rate_a", lambda q: q["batch_id"] >= before + 2, 10)
    assert after["state"] == "active" and not after["error"], after


def test_a_stop_request_returns_at_once_and_spares_the_other_sessions_query(
    streams: Kernel,
) -> None:
    b_before = query_on_board(streams, "long_b")["batch_id"]
    reply, seconds = request(
        streams, {"version": 1, "action": "stop_query", "query": "rate_a", "source": "sidebar"}
    )
    assert reply["status"] == "ok" and reply["query"]["state"] == "stopping", reply
    # At once, not after the query's stop (a batch and more: seconds); its figure is
    # benchmarks/streaming_queries.py's. CI's load once made a 15 ms reply take 52 ms.
    assert seconds < 0.5, f"the stop request took {seconds * 1000:.0f} ms"
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


def query_outputs(kernel: Kernel, display_id: str) -> list[dict[str, Any]]:
    """The IOPub messages of one query's in-cell view seen so far, in order."""
    return [
        m
        for m in kernel.iopub_log
        if m["msg_type"] in ("display_data", "update_display_data")
        and m["content"].get("transient", {}).get("display_id") == display_id
    ]


def wait_for_summary(kernel: Kernel, display_id: str, timeout: float = 10) -> dict[str, Any]:
    """The message that ends a query's in-cell view (its summary line)."""

    def summary(msg: dict[str, Any]) -> bool:
        content = msg["content"]
        data = content.get("data", {}).get(QUERY_MIME)
        return content.get("transient", {}).get("display_id") == display_id and bool(
            data and data["final"]
        )

    return kernel.wait_for_iopub(summary, timeout)


def test_the_starting_cell_shows_the_query_live_until_it_ends(streams: Kernel) -> None:
    started = start(streams, "a", "viewed")
    first = query_view_display(started)
    assert first["data"][QUERY_MIME]["query"]["name"] == "viewed"
    display_id = first["transient"]["display_id"]
    (shown,) = query_outputs(streams, display_id)
    cell_request = shown["parent_header"]["msg_id"]

    # After the cell returned: updates of that output, under that cell, as batches run.
    def later_batch(msg: dict[str, Any]) -> bool:
        data = msg["content"].get("data", {}).get(QUERY_MIME)
        return (
            msg["msg_type"] == "update_display_data"
            and msg["content"]["transient"]["display_id"] == display_id
            and data is not None
            and (data["query"]["batch_id"] or 0) >= 1
        )

    live = streams.wait_for_iopub(later_batch, 20)
    assert live["parent_header"]["msg_id"] == cell_request
    live_data = live["content"]["data"]
    assert errors(live_data[QUERY_MIME], "CellQuery") == []
    assert live_data["text/plain"].startswith("streaming query 'viewed' of session a active")
    # Its Stop (the view's) -> one summary line, the last output of the view.
    reply, _ = request(
        streams, {"version": 1, "action": "stop_query", "query": "viewed", "source": "cell"}
    )
    assert reply["status"] == "ok", reply

    last = wait_for_summary(streams, display_id)
    text = last["content"]["data"]["text/plain"]
    assert text.startswith("streaming query 'viewed' of session a stopped (from its view) after ")
    assert "\n" not in text
    wait_for_board_updates(streams)  # each would update the view, if anything still did
    streams.ok("pass")  # reads what came meanwhile: nothing follows the summary
    assert query_outputs(streams, display_id)[-1] is last


@pytest.mark.parametrize("session", ["a", "c"])
def test_interrupt_ends_a_wait_on_a_query_in_one_line(streams: Kernel, session: str) -> None:
    name = f"waited_{session}"
    query = RATE_QUERY.format(rows=5, name=name, trigger="100 milliseconds")
    if session == "a":
        # A foreachBatch query that ended leaves py4j a closed callback connection, on
        # which its clean-up of the interrupted wait fails (a Py4JError instead of the
        # KeyboardInterrupt, the wait's connection left open): still one line, and the
        # next calls get their own answers.
        streams.ok(
            "%%spark_session a\n"
            "_fb = (spark.readStream.format('rate').load().writeStream"
            ".foreachBatch(lambda frame, batch: frame.count()).start())\n"
            "_fb.processAllAvailable()\n_fb.stop()"
        )
    waiting = streams.client.execute(
        f"%%spark_session {session}\nq_{name} = {query}\nq_{name}.awaitTermination()"
    )
    wait_for_query(streams, name, lambda q: q["batch_id"] is not None, 20)
    assert streams.manager is not None
    interrupted = time.monotonic()
    streams.manager.interrupt_kernel()
    ended = streams.collect(waiting, timeout=30)
    took = time.monotonic() - interrupted
    # The wait never ends by itself: any bound well inside the collect's timeout shows
    # the Interrupt ended it (tight bounds flake under CI's load).
    assert took < 15.0, took
    assert ended.error_name == "KeyboardInterrupt", (ended.error_name, ended.traceback)
    lines = "\n".join(ended.traceback).splitlines()
    assert lines == [
        f"KeyboardInterrupt: Interrupted: streaming query '{name}' was stopped "
        "(this cell started it)."
    ], lines
    assert ended.stderr == "", ended.stderr  # no py4j or gRPC traceback
    wait_for_query(streams, name, lambda q: q["state"] == "stopped", 5)
    for rows in (3, 4):  # each call its own answer, not the ended wait's
        counted = streams.ok(f"%%spark_session {session}\nspark.range({rows}).count()")
        assert counted.result_text == str(rows)


def test_interrupt_leaves_running_a_query_another_cell_started(streams: Kernel) -> None:
    waiting = streams.client.execute("q_long_b.awaitTermination()")
    wait_until_blocked_in_a_wait(streams)
    assert streams.manager is not None
    streams.manager.interrupt_kernel()
    ended = streams.collect(waiting, timeout=30)
    assert "\n".join(ended.traceback) == (
        "KeyboardInterrupt: Interrupted: stopped waiting for streaming query 'long_b', which "
        "keeps running (`%spark_session stop_query long_b` stops it)."
    ), ended.traceback
    assert query_on_board(streams, "long_b")["state"] == "active"


def test_a_failing_foreach_batch_is_one_line_on_the_board(streams: Kernel) -> None:
    started = streams.ok(
        "%%spark_session a\n"
        "def _explode(frame, batch):\n"
        "    if batch >= 1:\n"
        "        raise ValueError('bad batch ' + str(batch))\n"
        "q_bad = (spark.readStream.format('rate').option('rowsPerSecond', 5).load()"
        ".writeStream.foreachBatch(_explode).queryName('bad').start())"
    )
    failed = wait_for_query(streams, "bad", lambda q: q["state"] == "failed", 30)
    assert "\n" not in failed["error"] and failed["error"], failed
    # The cell's view ends on the failure, in one line.
    view = query_view_display(started)
    line = wait_for_summary(streams, view["transient"]["display_id"])["content"]["data"]
    assert line["text/plain"].startswith("streaming query 'bad' of session a failed after ")
    assert line["text/plain"].endswith(": " + failed["error"]), line["text/plain"]
    assert streams.ok("%%spark_session a\nspark.range(4).count()").result_text == "4"


def test_an_interrupt_just_before_the_wait_still_ends_it(streams: Kernel) -> None:
    # The Interrupt lands in a py4j call that is no job (here a JVM sleep; under load, a
    # query's start or its report to the board): its cancel ends nothing, and the cell
    # then blocks in awaitTermination. Seen in CI: the wait never ended, and every later
    # cell of the kernel hung behind it.
    waiting = streams.client.execute(
        "%%spark_session a\n"
        "spark.sparkContext._jvm.java.lang.Thread.sleep(2000)\n"
        "q_late = " + RATE_QUERY.format(rows=5, name="late", trigger="100 milliseconds") + "\n"
        "q_late.awaitTermination()"
    )
    time.sleep(1.0)  # in the JVM's sleep
    assert streams.manager is not None
    streams.manager.interrupt_kernel()
    ended = streams.collect(waiting, timeout=30)
    assert ended.error_name == "KeyboardInterrupt", (ended.error_name, ended.traceback)
    lines = "\n".join(ended.traceback).splitlines()
    assert lines == [
        "KeyboardInterrupt: Interrupted: streaming query 'late' was stopped (this cell started it)."
    ], lines
    wait_for_query(streams, "late", lambda q: q["state"] == "stopped", 10)
    assert streams.ok("%%spark_session a\nspark.range(3).count()").result_text == "3"


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


def test_a_query_started_in_another_querys_foreach_batch_is_its_sessions(
    streams: Kernel,
) -> None:
    streams.ok(
        "%%spark_session a\n"
        "def _start_inner(frame, batch):\n"
        "    if batch == 1:\n"
        "        globals()['q_inner'] = (frame.sparkSession.readStream.format('rate').load()"
        ".writeStream.format('memory').queryName('inner').start())\n"
        "q_outer = (spark.readStream.format('rate').option('rowsPerSecond', 5).load()"
        ".writeStream.foreachBatch(_start_inner).queryName('outer').start())"
    )
    inner = wait_for_query(streams, "inner", lambda q: q["state"] == "active", 30)
    assert inner["session"] == "a" and inner["started_by"] == "", inner
    streams.ok("%spark_session stop_query outer\n%spark_session stop_query inner")
    wait_for_query(streams, "inner", lambda q: q["state"] == "stopped", 10)


def test_the_board_stays_bounded_however_long_a_query_runs(streams: Kernel) -> None:
    # long_b has made a batch every 100 ms (less often on a loaded machine) since the
    # module began, while the other tests ran: what the board holds for it after 200
    # batches against at 10 s (measured by the first test). An hour's worth:
    # tests/test_streaming_queries.py.
    wait_until(lambda: streams.value("_time.monotonic() - _long_started") >= 60, 90, 1.0)
    wait_until(lambda: query_on_board(streams, "long_b")["batch_id"] > 200, 180, 1.0)
    at_60 = long_query_share_of_the_board(streams)
    long_b = query_on_board(streams, "long_b")
    assert long_b["batch_id"] > 200, long_b["batch_id"]  # it really ran that long
    assert len(long_b["history"]) <= HISTORY_POINTS
    assert at_60 <= 2 * SIZES["at_10"], (SIZES, at_60)

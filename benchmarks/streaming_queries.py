"""Streaming queries (issue 36): what the board costs while a query runs, and how soon a
stop request shows the query stopped.

Two real kernels (``tests/kernel_driver.py``), each with its own ``local[2]`` context:

- ``none``: plain PySpark, ``SparkSession.builder.master("local[2]")`` with the settings
  of board_overhead.py's ``none`` kernel (``plain_context_code``: this project's
  ``OWNED_CONTEXT_DEFAULTS`` and ``LOCAL_MASTER_DEFAULTS``, the quiet log4j file,
  ``SPARK_LOCAL_IP``), so that only the monitor differs;
- ``sessions``: ``%load_ext jupyter_spark_sessions``, a comm opened to the
  ``jupyter_spark_sessions`` target with a ``subscribe`` request (what the JupyterLab
  sidebar does), then ``%spark_session create a --master local[2]``; queries start in
  ``%%spark_session a`` cells.

The query: ``rate-micro-batch`` (10 rows a batch, 1 partition) into a ``memory`` sink,
triggered every 100 ms: 10 batches a second whatever the clock.

Row 1, the board watching a running query: windows of ``--window`` seconds (default
60), alternating between the kernels in ABBA order, ``--minutes`` (default 5) of windows
per kernel; one query runs at a time (the other kernel idles). Each window starts a fresh
query, lets it make ``WARM_UP_BATCHES`` batches, then measures the CPU seconds (user +
system) of the kernel and its children (the JVM) over the window, the batches made (the
query's ``lastProgress.batchId`` read by a cell just before and just after), and the
messages the kernel sent on IOPub in the window (by their header's ``date``): for
``sessions`` the board's, its comm pushes and the display updates of the query's in-cell
view (``cells/query_views``; the cell job view's are counted too, none should come: no
cell runs). Figures: the ratio of the medians of CPU seconds per second (``sessions`` /
``none``; target <= 1.03), and the board's messages (target: bounded by the board's
polls, one every ``QUERY_POLL_INTERVAL`` while a query runs, not by the 10 batches a
second: at most ``MESSAGES_PER_POLL`` for each poll a window spans, in every window).

Row 2, stop -> stopped, in the ``sessions`` kernel: rounds alternating (ABBA) between
(a) a ``stop_query`` control-channel request (``source`` "sidebar": the protocol takes
only its known sources), then a ``list`` request every 20 ms until
the board shows the query "stopped" (timed from sending the stop request), and (b) a
cell ``q.stop()``, timed from its execute_request until its execute_reply. Each round
starts a fresh query and waits until the board shows ``WARM_UP_BATCHES`` of its batches.
Target: median (a) / median (b) <= 1.2. Also recorded: how long the stop request took to
return, when the comm push showing "stopped" was sent (what the sidebar sees) and, for
(b), when the board showed the query stopped (polled from the reply on).

Run: ``python benchmarks/streaming_queries.py`` (``--minutes M``, ``--window S``,
``--stop-rounds N``; ``--quick``: 15 s windows, 1 minute of windows in all, 5 stop
rounds of each kind, results to a temp file). Writes
benchmarks/results/streaming_queries.json (or ``--output PATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import datetime
from pathlib import Path
from queue import Empty
from typing import Any

import psutil  # type: ignore[import-untyped]  # no stubs in the dev environment

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from board_overhead import plain_context_code  # the same no-monitor kernel

from jupyter_spark_sessions import protocol
from jupyter_spark_sessions.board.poller import QUERY_POLL_INTERVAL
from jupyter_spark_sessions.cells.progress import MIME_TYPE as CELL_VIEW_MIME
from jupyter_spark_sessions.cells.query_views import MIME_TYPE as QUERY_VIEW_MIME
from kernel_driver import Kernel, start_with_profile  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "streaming_queries.json"
SIDES = ("none", "sessions")
CPU_TARGET = 1.03
STOP_TARGET = 1.2
#: The board's messages per poll at most while one query runs: a comm push and an update
#: of the query's in-cell view (``cells/query_views``), whatever the batches in between.
MESSAGES_PER_POLL = 2
BATCHES_PER_S = 10  # what the query's trigger asks for
WARM_UP_BATCHES = 20  # made before a window or a stop starts: past the first, slow ones
LIST_EVERY_S = 0.02
QUERY = (
    "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 10)"
    ".option('numPartitions', 1).load()"
    ".writeStream.format('memory').queryName('{name}')"
    ".trigger(processingTime='100 milliseconds').start()"
)


# ---- the kernels -------------------------------------------------------------------------


def start_kernel(side: str, base: Path) -> tuple[Kernel, str]:
    """A kernel of ``side`` with its context up; and the board comm's id (``sessions``)."""
    ipython_dir = base / f"ipython-{side}"
    if side == "none":
        ipython_dir.mkdir()  # no user profile or startup files
        kernel = Kernel(env={"IPYTHONDIR": str(ipython_dir)}, cwd=str(base))
        kernel.ok(plain_context_code(), timeout=240)
        return kernel, ""
    kernel = start_with_profile(ipython_dir, "", cwd=base)
    # Subscribed before the session exists, as a sidebar open at kernel start is.
    comm_id = uuid.uuid4().hex
    subscribe = {"version": protocol.PROTOCOL_VERSION, "action": "subscribe"}
    kernel.send_shell(
        "comm_open",
        {
            "comm_id": comm_id,
            "target_name": protocol.COMM_TARGET,
            "data": {**subscribe, "request_id": "bench"},
        },
    )
    kernel.wait_for_iopub(
        lambda m: (
            m["msg_type"] == "comm_msg"
            and m["content"].get("comm_id") == comm_id
            and m["content"]["data"].get("type") == "reply"
            and m["content"]["data"].get("status") == "ok"
        )
    )
    kernel.ok("%spark_session create a --master local[2]", timeout=240)
    kernel.ok("%%spark_session a\nassert spark.range(3).count() == 3")
    return kernel, comm_id


def kernel_pid(kernel: Kernel) -> int:
    assert kernel.manager is not None and kernel.manager.provisioner is not None
    return int(kernel.manager.provisioner.pid)  # type: ignore[attr-defined]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the kernel and all its children (the JVM) so far."""
    kernel = psutil.Process(pid)
    total = 0.0
    for process in [kernel, *kernel.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def start_query(kernel: Kernel, side: str, name: str) -> None:
    prefix = "%%spark_session a\n" if side == "sessions" else ""
    kernel.ok(f"{prefix}{name} = {QUERY.format(name=name)}")


def batch_id(kernel: Kernel, name: str) -> int:
    """The query's last batch id (-1 before its first)."""
    return int(kernel.value(f"getattr({name}.lastProgress, 'batchId', -1)"))


def wait_for_batches(kernel: Kernel, name: str, batches: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while batch_id(kernel, name) < batches:
        if time.monotonic() > deadline:
            raise TimeoutError(f"query {name} made no {batches} batches within {timeout} s")
        time.sleep(0.5)


# ---- IOPub: what the kernel sent, by the time it sent it ---------------------------------


def drain(kernel: Kernel) -> None:
    """Move what waits on the IOPub socket into ``kernel.iopub_log`` (the socket would
    drop messages past its high-water mark if nobody read it for minutes)."""
    while True:
        try:
            kernel.iopub_log.append(kernel.client.get_iopub_msg(timeout=0.01))
        except Empty:
            return


def sent_at(msg: dict[str, Any]) -> float:
    date = msg["header"]["date"]
    if isinstance(date, str):
        date = datetime.fromisoformat(date.replace("Z", "+00:00"))
    return float(date.timestamp())


def count_messages(
    log: list[dict[str, Any]], comm_id: str, start: float, end: float
) -> dict[str, Any]:
    """The IOPub messages of ``log`` sent between ``start`` and ``end`` (wall clock)."""
    comm, query_views, cell_views, every = 0, 0, 0, 0
    kinds: Counter[str] = Counter()
    streams: list[str] = []  # a few first lines of what went to stdout/stderr
    for msg in log:
        if not start <= sent_at(msg) <= end:
            continue
        every += 1
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_msg" and comm_id and content.get("comm_id") == comm_id:
            comm += 1
            kinds[str(content.get("data", {}).get("type"))] += 1
        elif kind in ("display_data", "update_display_data") and QUERY_VIEW_MIME in content.get(
            "data", {}
        ):
            query_views += 1
            kinds[f"query view {kind}"] += 1
        elif kind in ("display_data", "update_display_data") and CELL_VIEW_MIME in content.get(
            "data", {}
        ):
            cell_views += 1
            kinds[f"cell view {kind}"] += 1
        else:
            kinds[kind] += 1
            if kind == "stream" and len(streams) < 3:
                streams.append(f"{content['name']}: {content['text'].strip()[:200]}")
    return {
        "comm_msgs": comm,
        "query_view_msgs": query_views,
        "cell_view_msgs": cell_views,
        "iopub_msgs": every,
        "kinds": kinds,
        "stream_samples": streams,
    }


# ---- row 1: CPU while a query runs --------------------------------------------------------


def measure_window(
    kernel: Kernel, side: str, comm_id: str, name: str, seconds: float
) -> dict[str, Any]:
    pid = kernel_pid(kernel)
    start_query(kernel, side, name)
    wait_for_batches(kernel, name, WARM_UP_BATCHES)
    first = batch_id(kernel, name)
    # From the reply of the batch-id cell on: its own cost stays out.
    cpu_before, started = cpu_seconds(pid), time.time()
    while time.time() < started + seconds:
        drain(kernel)
        time.sleep(0.5)
    cpu, ended = cpu_seconds(pid) - cpu_before, time.time()
    last = batch_id(kernel, name)
    drain(kernel)
    messages = count_messages(kernel.iopub_log, comm_id, started, ended)
    kernel.ok(f"{name}.stop()")
    kernel.iopub_log.clear()
    wall = ended - started
    board_msgs = messages["comm_msgs"] + messages["query_view_msgs"] + messages["cell_view_msgs"]
    # A window of W s spans at most W / interval + 1 of the board's polls.
    polls = wall / QUERY_POLL_INTERVAL + 1
    return {
        "side": side,
        "query": name,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_per_s": cpu / wall,
        "batches": last - first,
        "batches_per_s": (last - first) / wall,
        "board_msgs": board_msgs,
        "board_msgs_per_min": board_msgs / wall * 60,
        "board_msgs_per_batch": board_msgs / max(1, last - first),
        "within_poll_bound": board_msgs <= MESSAGES_PER_POLL * polls,
        **messages,
        "kinds": dict(messages["kinds"]),
    }


def window_order(windows: int) -> list[str]:
    """ABBA...: drift of the machine's load cancels out of the two medians."""
    order: list[str] = []
    for pair in range(windows):
        order += list(SIDES) if pair % 2 == 0 else list(SIDES[::-1])
    return order


# ---- row 2: stop -> stopped -----------------------------------------------------------------


def request(kernel: Kernel, content: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = kernel.control(protocol.CONTROL_REQUEST, content)["content"]
    return reply


def board_query(kernel: Kernel, name: str) -> dict[str, Any] | None:
    reply = request(kernel, {"version": protocol.PROTOCOL_VERSION, "action": "list"})
    if reply["status"] != "ok":
        raise RuntimeError(f"list failed: {reply}")
    found = [q for q in reply["board"]["queries"] if q["name"] == name]
    return found[-1] if found else None


def wait_on_board(kernel: Kernel, name: str, started: float, timeout: float = 30) -> float:
    """Poll ``list`` every ``LIST_EVERY_S`` until the board shows ``name`` stopped; the
    seconds from ``started`` (perf_counter) to the reply that showed it."""
    deadline = started + timeout
    while True:
        asked = time.perf_counter()
        query = board_query(kernel, name)
        now = time.perf_counter()
        if query is not None and query["state"] == "stopped":
            return now - started
        if query is not None and query["state"] == "failed":
            raise RuntimeError(f"query {name} failed: {query['error']}")
        if now > deadline:
            raise TimeoutError(f"the board did not show {name} stopped within {timeout} s")
        time.sleep(max(0.0, asked + LIST_EVERY_S - time.perf_counter()))


def pushed_stopped_at(kernel: Kernel, comm_id: str, name: str) -> float | None:
    """When the kernel sent the first comm push showing ``name`` stopped (wall clock)."""
    drain(kernel)
    for msg in kernel.iopub_log:
        content = msg["content"]
        if msg["msg_type"] != "comm_msg" or content.get("comm_id") != comm_id:
            continue
        data = content.get("data", {})
        queries = data.get("queries") if data.get("type") == "board_patch" else None
        if data.get("type") == "board":
            queries = data["board"].get("queries")
        if any(q["name"] == name and q["state"] == "stopped" for q in queries or ()):
            return sent_at(msg)
    return None


def stop_round(kernel: Kernel, comm_id: str, way: str, name: str) -> dict[str, Any]:
    start_query(kernel, "sessions", name)
    deadline = time.monotonic() + 120
    while ((board_query(kernel, name) or {}).get("batch_id") or -1) < WARM_UP_BATCHES:
        if time.monotonic() > deadline:
            raise TimeoutError(f"query {name} made no {WARM_UP_BATCHES} batches")
        time.sleep(0.1)
    drain(kernel)
    kernel.iopub_log.clear()
    record: dict[str, Any] = {"way": way, "query": name}
    wall_started, started = time.time(), time.perf_counter()
    if way == "request":
        reply = request(
            kernel,
            {
                "version": protocol.PROTOCOL_VERSION,
                "action": "stop_query",
                "query": name,
                "source": "sidebar",  # what the sidebar sends (sources are a fixed set)
            },
        )
        record["request_returned_ms"] = (time.perf_counter() - started) * 1000
        if reply["status"] != "ok" or reply["query"]["state"] != "stopping":
            raise RuntimeError(f"stop_query failed: {reply}")
        record["stopped_s"] = wait_on_board(kernel, name, started)
    else:
        msg_id = kernel.client.execute(f"{name}.stop()")
        while True:
            reply = kernel.client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        record["stopped_s"] = time.perf_counter() - started
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"{name}.stop() failed: {reply['content']}")
        kernel.wait_for_iopub(
            lambda m: (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            )
        )
        # Not the figure: the board learns of a stop it did not make at its next read.
        record["board_shows_stopped_s"] = wait_on_board(kernel, name, started)
    pushed = pushed_stopped_at(kernel, comm_id, name)
    record["push_stopped_s"] = None if pushed is None else pushed - wall_started
    kernel.iopub_log.clear()
    return record


# ---- summary ---------------------------------------------------------------------------------


def spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize_windows(windows: list[dict[str, Any]]) -> dict[str, Any]:
    by_side = {side: [w for w in windows if w["side"] == side] for side in SIDES}
    figures = {
        side: {
            key: spread([w[key] for w in mine])
            for key in (
                "cpu_per_s",
                "batches_per_s",
                "board_msgs_per_min",
                "board_msgs_per_batch",
                "iopub_msgs",
            )
        }
        | {"windows": len(mine), "batches": sum(w["batches"] for w in mine)}
        for side, mine in by_side.items()
    }
    cpu = {side: statistics.median(w["cpu_per_s"] for w in by_side[side]) for side in SIDES}
    # Each sessions window over the none window of its ABBA pair.
    paired = [
        s["cpu_per_s"] / n["cpu_per_s"]
        for s, n in zip(by_side["sessions"], by_side["none"], strict=True)
    ]
    return {
        "figures": figures,
        "cpu_per_s_median": cpu,
        "cpu_ratio": cpu["sessions"] / cpu["none"],
        "cpu_paired_ratio": spread(paired),
        "board_msgs_per_min_median": statistics.median(
            w["board_msgs_per_min"] for w in by_side["sessions"]
        ),
        "board_msgs_within_poll_bound": all(w["within_poll_bound"] for w in by_side["sessions"]),
    }


def summarize_stops(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def of(way: str, key: str) -> list[float]:
        return [r[key] for r in rounds if r["way"] == way and r.get(key) is not None]

    request_s, cell_s = of("request", "stopped_s"), of("cell", "stopped_s")
    pushed = of("request", "push_stopped_s")
    if len(pushed) != len(request_s):
        raise RuntimeError("a stop request's query never showed stopped in a board push")
    return {
        "request_to_stopped_s": spread(request_s),
        "cell_stop_reply_s": spread(cell_s),
        # Judged: the views hear "stopped" from the board's push, which has no polling
        # step of the benchmark's own (a `list` every 20 ms adds 10 ms on average).
        "ratio": statistics.median(pushed) / statistics.median(cell_s),
        "list_ratio": statistics.median(request_s) / statistics.median(cell_s),
        "request_returned_ms": spread(of("request", "request_returned_ms")),
        "push_stopped_s": {way: spread(of(way, "push_stopped_s")) for way in ("request", "cell")},
        "cell_board_shows_stopped_s": spread(of("cell", "board_shows_stopped_s")),
    }


# ---- running it --------------------------------------------------------------------------------


def shutdown_all(kernels: dict[str, Kernel]) -> list[str]:
    """Shut every kernel down, in parallel (plain PySpark's takes about 30 s: see
    kernel_shutdown.py); then end any process of ours still there 10 s later (a JVM a
    kernel left behind). What it had to end, as "side: pid name"."""

    def stop(kernel: Kernel) -> None:
        try:
            kernel.shutdown()
        except Exception as exc:
            print(f"kernel shutdown failed: {exc!r}", file=sys.stderr)
            if kernel.manager is not None:
                kernel.manager.shutdown_kernel(now=True)
        shutil.rmtree(kernel._spec_root, ignore_errors=True)

    # Only this process's descendants, the kernels it started and their JVMs, taken
    # before the shutdown too: a JVM outliving its kernel is no longer our child.
    ours: dict[int, tuple[str, psutil.Process]] = {}
    for side, kernel in kernels.items():
        try:
            root = psutil.Process(kernel_pid(kernel))
            for process in [root, *root.children(recursive=True)]:
                ours[process.pid] = (side, process)
        except psutil.NoSuchProcess:
            continue
    for process in psutil.Process().children(recursive=True):
        ours.setdefault(process.pid, ("?", process))
    stoppers = [threading.Thread(target=stop, args=(k,)) for k in kernels.values()]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        stopper.join()
    for process in psutil.Process().children(recursive=True):
        ours.setdefault(process.pid, ("?", process))
    _, alive = psutil.wait_procs([p for _, p in ours.values()], timeout=10)
    ended = []
    for process in alive:  # is_running (in wait_procs) checked pid and start time
        try:
            side = ours[process.pid][0]
            ended.append(f"{side}: {process.pid} {process.name()}")
            process.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=10)
    for line in ended:
        print(f"ended leftover process {line}", file=sys.stderr)
    return ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="measured per kernel")
    parser.add_argument("--window", type=float, default=60.0, help="seconds a window")
    parser.add_argument("--stop-rounds", type=int, default=20, help="stops of each kind")
    parser.add_argument("--quick", action="store_true", help="1 minute, 5 stops, temp file")
    parser.add_argument("--output", type=Path, help="where to write the JSON result")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.window, args.stop_rounds = 0.5, 15.0, 5
    output = args.output or (
        Path(tempfile.gettempdir()) / "streaming_queries.quick.json" if args.quick else RESULTS
    )
    windows_per_side = max(1, round(args.minutes * 60 / args.window))
    # A SIGTERM too runs the finally below: no kernel or JVM is left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    base = Path(tempfile.mkdtemp(prefix="jss-bench-streaming-"))
    load_before = os.getloadavg()[0]
    kernels: dict[str, Kernel] = {}
    comm_id = ""
    windows: list[dict[str, Any]] = []
    stops: list[dict[str, Any]] = []
    try:
        for side in SIDES:
            started = time.monotonic()
            kernels[side], comm = start_kernel(side, base)
            comm_id = comm or comm_id
            print(f"{side}: kernel and Spark up in {time.monotonic() - started:.1f} s", flush=True)
        # Warm-up (JIT, the first query's costs), not measured.
        for side in SIDES:
            measure_window(kernels[side], side, comm_id, f"warm_{side}", 5.0)
        for number, side in enumerate(window_order(windows_per_side)):
            window = measure_window(kernels[side], side, comm_id, f"w{number}_{side}", args.window)
            windows.append(window)
            print(
                f"window {number} {side:8} cpu {window['cpu_per_s']:.3f} s/s  "
                f"batches {window['batches_per_s']:.2f}/s  "
                f"board {window['board_msgs_per_min']:.1f} msgs/min  "
                f"iopub {window['iopub_msgs']} {window['kinds']}",
                flush=True,
            )
        sessions = kernels["sessions"]
        for way in ("request", "cell"):  # warm-up of each way
            stop_round(sessions, comm_id, way, f"stop_warm_{way}")
        for number in range(args.stop_rounds):
            ways = ("request", "cell") if number % 2 == 0 else ("cell", "request")
            for way in ways:
                record = stop_round(sessions, comm_id, way, f"s{number}_{way}")
                stops.append(record)
                print(
                    f"stop {number} {way:7} {record['stopped_s'] * 1000:7.1f} ms"
                    + (
                        f"  (request returned in {record['request_returned_ms']:.2f} ms)"
                        if way == "request"
                        else ""
                    ),
                    flush=True,
                )
    finally:
        leftovers = shutdown_all(kernels)
        shutil.rmtree(base, ignore_errors=True)

    row1, row2 = summarize_windows(windows), summarize_stops(stops)
    result: dict[str, Any] = {
        "benchmark": "streaming_queries",
        "quick": bool(args.quick),
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
        "master": "local[2]",
        "query": QUERY.format(name="<name>"),
        "batches_per_s_asked": BATCHES_PER_S,
        "window_s": args.window,
        "windows_per_side": windows_per_side,
        "warm_up_batches": WARM_UP_BATCHES,
        "stop_rounds": args.stop_rounds,
        "list_every_s": LIST_EVERY_S,
        "query_poll_interval_s": QUERY_POLL_INTERVAL,
        "targets": {
            "cpu_ratio": CPU_TARGET,
            "board_msgs_per_poll": MESSAGES_PER_POLL,
            "stop_ratio": STOP_TARGET,
        },
        "leftover_processes_ended": leftovers,
        "running": row1,
        "stopping": row2,
        "windows": windows,
        "stops": stops,
    }
    result["meets_targets"] = (
        row1["cpu_ratio"] <= CPU_TARGET
        and row1["board_msgs_within_poll_bound"]
        and row2["ratio"] <= STOP_TARGET
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("windows", "stops")}, indent=2))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()

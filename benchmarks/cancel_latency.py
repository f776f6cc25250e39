"""Cancel latency: a job board cancel request against a direct ``cancelJobsWithTag``.

Both cancel the same kind of job (one task of a Python UDF that would sleep for minutes)
in the same run, alternating, on an embedded ``local[2]`` context started the way the
extension starts it. Figures:

- request return: how long ``RequestHandler.handle`` (the code the kernel's control
  thread runs for a ``cancel`` request) takes to return; target: median < 5 ms;
- request -> end: from the request until the cell's ``collect()`` raises Spark's
  cancellation error; target: median at most 1.2x the direct call's.

Run: ``python benchmarks/cancel_latency.py`` (``make bench`` runs every benchmark and
renders docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROUNDS = 20
RESULTS = Path(__file__).parent / "results" / "cancel_latency.json"


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import InheritableThread
    from pyspark.sql.functions import udf

    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig, group_tag
    from jupyter_spark_sessions.kernel.request_handler import RequestHandler

    config = SparkSessionsConfig(
        default_master="local[2]", context_conf={"spark.ui.enabled": "false"}
    )
    registry = SparkSessionsApp(config).registry
    registry.create("bench")
    handler = RequestHandler(registry, registry.board)
    sc = registry.session("bench").sparkContext

    @udf("long")
    def sleepy(x: int) -> int:
        import time as t

        t.sleep(300)
        return x

    def start(count: int) -> tuple[threading.Event, dict[str, float]]:
        ended = threading.Event()
        times: dict[str, float] = {}

        def run() -> None:
            with registry.running_in("bench", count) as spark:
                try:
                    spark.range(0, 1, 1, 1).select(sleepy("id")).collect()
                except Exception:
                    times["ended"] = time.perf_counter()
            ended.set()

        InheritableThread(target=run).start()
        return ended, times

    def wait_running(group_id: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            group = registry.board.snapshot().group(group_id)
            if group is not None and group.state == "running" and group.tasks.active:
                return
            time.sleep(0.02)
        raise RuntimeError(f"{group_id} never ran")

    def wait_slots_free() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not registry.board.busy():
                return
            time.sleep(0.05)

    request_ms: list[float] = []
    via_board: list[float] = []
    direct: list[float] = []
    count = 0
    for _ in range(ROUNDS):
        for method in ("board", "direct"):
            count += 1
            group_id = f"bench:{count}"
            ended, times = start(count)
            wait_running(group_id)
            started = time.perf_counter()
            if method == "board":
                reply = handler.handle({"version": 1, "action": "cancel", "groups": [group_id]})
                request_ms.append((time.perf_counter() - started) * 1000)
                assert reply["status"] == "ok" and reply["cancelling"] == [group_id], reply
            else:
                sc.cancelJobsWithTag(group_tag("bench", count))
            if not ended.wait(60) or "ended" not in times:
                raise RuntimeError(f"{group_id} was not cancelled")
            (via_board if method == "board" else direct).append((times["ended"] - started) * 1000)
            wait_slots_free()

    registry.shutdown()
    result: dict[str, Any] = {
        "benchmark": "cancel_latency",
        "rounds": ROUNDS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "request_return_ms_median": statistics.median(request_ms),
        "request_return_ms_max": max(request_ms),
        "board_request_to_end_ms_median": statistics.median(via_board),
        "direct_cancel_to_end_ms_median": statistics.median(direct),
        "ratio": statistics.median(via_board) / statistics.median(direct),
        "targets": {"request_return_ms_median": 5.0, "ratio": 1.2},
    }
    result["meets_targets"] = result["request_return_ms_median"] < 5.0 and result["ratio"] <= 1.2
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

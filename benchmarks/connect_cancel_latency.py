"""Cancel latency for Spark Connect: a job board cancel request against a direct
``SparkSession.interruptTag``, on a local Connect server started the way
``create NAME --remote local`` starts it.

Both cancel the same kind of query (one task of a Python UDF that would sleep for
minutes), alternating, in the same run. Figures:

- request return: how long ``RequestHandler.handle`` (what the kernel's control thread
  runs for a ``cancel`` request) takes; target: median < 5 ms;
- request -> end: until the cell's ``collect()`` raises OPERATION_CANCELED; target:
  median at most 1.2x the direct ``interruptTag``'s;
- request -> observed: until the board shows the group "cancelled" (the state the
  sidebar and the panel show).

Run: ``python benchmarks/connect_cancel_latency.py`` (``make bench`` runs it too).
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

ROUNDS = 10
RESULTS = Path(__file__).parent / "results" / "connect_cancel_latency.json"


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql.connect.functions import udf
    from pyspark.sql.types import LongType

    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig, group_tag
    from jupyter_spark_sessions.kernel.request_handler import RequestHandler

    config = SparkSessionsConfig(
        connect_master="local[2]", connect_conf={"spark.ui.enabled": "false"}
    )
    registry = SparkSessionsApp(config).registry
    registry.create("bench", remote="local")
    handler = RequestHandler(registry, registry.board)
    session = registry.session("bench")

    @udf(returnType=LongType())
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

        threading.Thread(target=run).start()
        return ended, times

    def wait_for(group_id: str, state: str, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            group = registry.board.snapshot().group(group_id)
            if (
                group is not None
                and group.state == state
                and (state != "running" or group.tasks.active)
            ):
                return time.perf_counter()
            time.sleep(0.005)
        raise RuntimeError(f"{group_id} never became {state}")

    request_ms: list[float] = []
    via_board: list[float] = []
    observed: list[float] = []
    direct: list[float] = []
    count = 0
    for _ in range(ROUNDS):
        for method in ("board", "direct"):
            count += 1
            group_id = f"bench:{count}"
            ended, times = start(count)
            wait_for(group_id, "running")
            started = time.perf_counter()
            if method == "board":
                reply = handler.handle({"version": 1, "action": "cancel", "groups": [group_id]})
                request_ms.append((time.perf_counter() - started) * 1000)
                assert reply["status"] == "ok" and reply["cancelling"] == [group_id], reply
                observed.append((wait_for(group_id, "cancelled") - started) * 1000)
            else:
                session.interruptTag(group_tag("bench", count))
            if not ended.wait(60) or "ended" not in times:
                raise RuntimeError(f"{group_id} was not cancelled")
            (via_board if method == "board" else direct).append((times["ended"] - started) * 1000)
            time.sleep(1.0)  # let the killed task's Python worker exit

    registry.shutdown()
    result: dict[str, Any] = {
        "benchmark": "connect_cancel_latency",
        "rounds": ROUNDS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "request_return_ms_median": statistics.median(request_ms),
        "request_return_ms_max": max(request_ms),
        "board_request_to_end_ms_median": statistics.median(via_board),
        "board_request_to_observed_ms_median": statistics.median(observed),
        "direct_interrupt_to_end_ms_median": statistics.median(direct),
        "ratio": statistics.median(via_board) / statistics.median(direct),
        "targets": {"request_return_ms_median": 5.0, "ratio": 1.2},
    }
    result["meets_targets"] = result["request_return_ms_median"] < 5.0 and result["ratio"] <= 1.2
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

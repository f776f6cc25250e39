"""Fair share between sessions: one session's small job beside another's big one.

On a context started the way the extension starts it, two sessions a and b. Session a
runs a job of many short tasks (a Python UDF sleeping 0.25 s per row, one row per task)
that holds every slot; while it runs, session b runs a small job (4 tasks of 1.5 s).
Figure: b's time beside a's job over its time alone, with this project's scheduling
(FAIR, a pool per session) against plain PySpark's (FIFO: one queue), on ``local[2]`` and
``local-cluster[2,1,1024]``, in the same run. Target: FAIR <= 2.5x (equal weights on 2
slots give b one slot of two: about 2x).

Cost of the pools: one session's job of 20,000 tiny tasks (no other session), FAIR with
its pool against FIFO, alternating contexts; target <= 1.03x.

Each task's start and end are recorded, so the run also draws what the two sessions'
tasks did over time (docs/images/fair-share.svg, shown in docs/sessions.md).

Run: ``python benchmarks/fair_share.py`` (``make bench`` runs every benchmark and renders
docs/benchmarks.md).
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

import fair_share_render

MASTERS = ("local[2]", "local-cluster[2,1,1024]")
BIG_TASKS, BIG_SECONDS = 240, 0.25
SMALL_TASKS, SMALL_SECONDS = 4, 1.5
COST_TASKS, COST_ROUNDS = 20_000, 4
RESULTS = Path(__file__).parent / "results" / "fair_share.json"


def registry_on(master: str, mode: str) -> Any:
    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig

    conf = {"spark.ui.enabled": "false"}
    if mode == "FIFO":  # plain PySpark's scheduling
        conf["spark.scheduler.mode"] = "FIFO"
    return SparkSessionsApp(SparkSessionsConfig(default_master=master, context_conf=conf)).registry


def timed_tasks(session: Any, rows: int, seconds: float) -> list[tuple[float, float]]:
    """Run one job of ``rows`` tasks, each sleeping ``seconds`` in a Python UDF; each
    task's (start, end) wall-clock time."""
    from pyspark.sql.functions import udf

    @udf("string")
    def sleepy(x: int) -> str:
        import time as t

        started = t.time()
        t.sleep(seconds)
        return f"{started} {t.time()}"

    df = session.range(0, rows, 1, rows).select(sleepy("id").alias("v"))
    return [(float(s), float(e)) for s, e in (r.v.split() for r in df.collect())]


def beside(master: str, mode: str) -> dict[str, Any]:
    """b's small job alone, then beside a's big job, with ``mode`` scheduling."""
    registry = registry_on(master, mode)
    try:
        registry.create("a")
        registry.create("b")
        a, b = registry.session("a"), registry.session("b")
        timed_tasks(a, 2, 0)  # each session's Python workers started: warm jobs only
        timed_tasks(b, 2, 0)
        started = time.monotonic()
        timed_tasks(b, SMALL_TASKS, SMALL_SECONDS)
        alone = time.monotonic() - started
        big: dict[str, Any] = {}
        origin = time.time()
        thread = threading.Thread(
            target=lambda: big.update(tasks=timed_tasks(a, BIG_TASKS, BIG_SECONDS))
        )
        thread.start()
        wait_for_running_tasks(a.sparkContext, 2, completed=2)
        started = time.monotonic()
        small = timed_tasks(b, SMALL_TASKS, SMALL_SECONDS)
        with_big = time.monotonic() - started
        thread.join()
        return {
            "alone_s": alone,
            "beside_s": with_big,
            "ratio": with_big / alone,
            "timeline": {
                "a": [(s - origin, e - origin) for s, e in big["tasks"]],
                "b": [(s - origin, e - origin) for s, e in small],
            },
        }
    finally:
        registry.shutdown()


def wait_for_running_tasks(sc: Any, running: int, completed: int) -> None:
    tracker = sc.statusTracker()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        stages = [s for s in stages if s is not None]
        if sum(s.numActiveTasks for s in stages) >= running and (
            sum(s.numCompletedTasks for s in stages) >= completed
        ):
            return
        time.sleep(0.05)
    raise RuntimeError("the big job never held the slots")


def pool_cost() -> dict[str, Any]:
    """One session's 20,000-task job, FAIR in its pool against FIFO: a context each, in
    ABBA order after one context to warm the JVM (contexts share the kernel's JVM, so
    later ones run JIT-compiled code)."""
    seconds: dict[str, list[float]] = {"FAIR": [], "FIFO": []}
    orders = [("FIFO",)] + [
        ("FAIR", "FIFO") if i % 2 == 0 else ("FIFO", "FAIR") for i in range(COST_ROUNDS)
    ]
    for round_number, order in enumerate(orders):
        for mode in order:
            registry = registry_on("local[2]", mode)
            try:
                registry.create("solo")
                session = registry.session("solo")
                many = session.range(0, COST_TASKS, 1, COST_TASKS).selectExpr("sum(id)")
                session.range(0, 200, 1, 200).selectExpr("sum(id)").collect()  # warm
                started = time.monotonic()
                many.collect()
                if round_number:  # the first context only warms the JVM
                    seconds[mode].append(time.monotonic() - started)
            finally:
                registry.shutdown()
    fair, fifo = statistics.median(seconds["FAIR"]), statistics.median(seconds["FIFO"])
    return {"fair_s": fair, "fifo_s": fifo, "ratio": fair / fifo, "rounds": seconds}


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    runs = {
        f"{master} {mode}": beside(master, mode) for master in MASTERS for mode in ("FAIR", "FIFO")
    }
    cost = pool_cost()
    fair_ratios = [runs[f"{m} FAIR"]["ratio"] for m in MASTERS]
    result: dict[str, Any] = {
        "benchmark": "fair_share",
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "big_job": {"tasks": BIG_TASKS, "seconds": BIG_SECONDS},
        "small_job": {"tasks": SMALL_TASKS, "seconds": SMALL_SECONDS},
        "runs": runs,
        "pool_cost": cost,
        "cost_tasks": COST_TASKS,
        "targets": {"fair_ratio": 2.5, "pool_cost_ratio": 1.03},
    }
    result["meets_targets"] = max(fair_ratios) <= 2.5 and cost["ratio"] <= 1.03
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    fair_share_render.write_picture(result)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    for key, run in runs.items():
        print(f"{key}: alone {run['alone_s']:.2f} s, beside {run['beside_s']:.2f} s")


if __name__ == "__main__":
    main()

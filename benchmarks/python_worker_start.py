"""What a context's Python workers cost to start: Spark's own daemon (``pyspark.daemon``,
which imports PySpark from Spark's ``pyspark.zip`` and compiles it in every process)
against this project's (``backends/spark_daemon.py``, which has them import the
installed, compiled PySpark of the same release), same run.

Each round starts a ``local[2]`` context with one daemon module or the other (the JVM
stays; the context is new, so is its daemon), runs a 2-partition job of a trivial
Python UDF (Spark's default, Arrow-optimised in 4.3), then sums the CPU time of the
daemon and its two workers and takes the job's wall time; ABBA order after one
unmeasured round of each. Target: the CPU of ours / Spark's <= 0.7.

Run: ``python benchmarks/python_worker_start.py``; writes results/python_worker_start.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil

ROUNDS, TARGET = 6, 0.7
RESULTS = Path(__file__).parent / "results" / "python_worker_start.json"
MODULES = {
    "spark": "pyspark.daemon",
    "ours": "jupyter_spark_sessions.backends.spark_daemon",
}


def python_processes() -> list[psutil.Process]:
    """The Python daemons and workers below this process (under the JVM)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.cmdline()[1:3] == ["-m", "pyspark.daemon"]:  # the JVM's names it too
                found.append(child)
        except psutil.Error:
            continue
    return found


def one_round(side: str) -> dict[str, float]:
    """A new context with ``side``'s daemon: the CPU seconds of its daemon and workers
    after a UDF's first job, and that job's wall time."""
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    spark = (
        SparkSession.builder.master("local[2]")
        .appName(f"python worker start: {side}")
        .config("spark.ui.enabled", "false")
        .config("spark.python.daemon.module", MODULES[side])
        .getOrCreate()
    )
    try:
        plus_one = udf(lambda x: x + 1, "long")
        started = time.monotonic()
        rows = spark.range(0, 4, 1, 2).select(plus_one("id")).collect()
        job_s = time.monotonic() - started
        assert sorted(r[0] for r in rows) == [1, 2, 3, 4], rows
        processes = python_processes()
        assert len(processes) >= 3, f"expected a daemon and two workers: {processes}"
        cpu = 0.0
        for process in processes:
            times = process.cpu_times()
            cpu += times.user + times.system
        return {"cpu_s": cpu, "job_s": job_s, "processes": len(processes)}
    finally:
        spark.stop()
        deadline = time.monotonic() + 30  # the daemon ends with its context
        while python_processes() and time.monotonic() < deadline:
            time.sleep(0.2)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    load_before = os.getloadavg()
    for side in MODULES:
        print(f"warm-up {side}: {one_round(side)}", flush=True)
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in MODULES}
    for i in range(ROUNDS):
        for side in ("spark", "ours") if i % 2 == 0 else ("ours", "spark"):
            runs[side].append(one_round(side))
            print(f"round {i + 1}: {side} {runs[side][-1]}", flush=True)
    median: dict[str, dict[str, float]] = {
        side: {k: statistics.median(r[k] for r in rows) for k in ("cpu_s", "job_s")}
        for side, rows in runs.items()
    }
    ratio = median["ours"]["cpu_s"] / median["spark"]["cpu_s"]
    result: dict[str, Any] = {
        "benchmark": "python_worker_start",
        "rounds": ROUNDS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "median": median,
        "cpu_ratio": ratio,
        "job_ratio": median["ours"]["job_s"] / median["spark"]["job_s"],
        "target": TARGET,
        "meets_targets": ratio <= TARGET,
        "runs": runs,
        "load_average_1m": {"before": load_before[0], "after": os.getloadavg()[0]},
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()

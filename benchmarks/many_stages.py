"""A job of 2,000 stages under a cell: what watching it sends, and what it costs.

Two real IPython kernels (``board_overhead.BenchKernel``, each with its own embedded
``local[2]`` context): ``none`` (plain PySpark, the baseline) and ``sessions`` (this
project, the in-cell view on and the sidebar's comm subscribed, as in
board_overhead.py). The job is one RDD job of ``--stages`` shuffles side by side: the
``union`` of that many one-partition RDDs, each ``partitionBy(2)``, then ``count()``:
``--stages`` map stages of one task and a result stage of two tasks per shuffle. (A
chain of 2,000 shuffles one after the other overflows the stack of Spark's own DAG
scheduler thread, ``DAGScheduler.submitStage`` being recursive: the job then never
ends, with or without a monitor.) Rounds alternate the kernels' order.

Figures per run: the cell's wall time; with this project, the messages and bytes the
kernel sent to the frontend for the views (the in-cell view's display messages and the
board's comm pushes) from the cell's start until they went quiet, their rate over the
cell (against the poll rate: ``poll_interval`` is 0.25 s, so two views at most 8 a
second), the largest in-cell output (the final one is what the saved notebook keeps:
target < 64 KB) and the kernel process's resident memory (Python only: the JVM is a
child) before the first measured job and after each.

Run: ``python benchmarks/many_stages.py`` (``--stages N``, ``--rounds N``). Writes
benchmarks/results/many_stages.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
from board_overhead import (
    POLL_INTERVAL_S,
    BenchKernel,
    kernel_env,
    shutdown,
    start_kernel,
    write_kernelspec,
)

RESULTS = Path(__file__).parent / "results" / "many_stages.json"
STAGES = 2000
ROUNDS = 2
OUTPUT_LIMIT = 64 * 1024
#: Two views (the cell's and the sidebar's), each at most one message per poll.
RATE_LIMIT = 2 / POLL_INTERVAL_S


def job_code(stages: int) -> str:
    return (
        "_sc = spark.sparkContext\n"
        "_parts = [_sc.parallelize([(i, i)], 1).partitionBy(2) for i in range(STAGES)]\n"
        "assert _sc.union(_parts).count() == STAGES"
    ).replace("STAGES", str(stages))


def measure(kernel: BenchKernel, stages: int, round_number: int) -> dict[str, Any]:
    settle = kernel.run("pass")
    kernel.wait_quiet(settle, 2.0, 60.0)
    kernel.close(settle)
    window = kernel.run(job_code(stages))
    drained = kernel.wait_quiet(window, 5.0, 120.0)
    kernel.close(window)
    assert window.idle_at is not None
    wall = window.idle_at - window.sent_at
    record: dict[str, Any] = {
        "config": kernel.name,
        "round": round_number,
        "error": window.error,
        "wall_s": wall,
        "monitor_msgs": window.monitor_msgs,
        "monitor_bytes": window.monitor_bytes,
        "cell_view_msgs": window.cell_view_msgs,
        "cell_view_bytes": window.cell_view_bytes,
        "largest_cell_view_bytes": window.cell_view_largest,
        "msgs_per_s": window.monitor_msgs / wall if wall else None,
        "drained": drained,
        "kernel_rss_mb": psutil.Process(kernel.pid).memory_info().rss / 2**20,
    }
    print(json.dumps(record), flush=True)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=STAGES)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="jss-bench-stages-"))
    write_kernelspec(scratch)
    os.environ["JUPYTER_PATH"] = str(scratch)
    env = kernel_env(str(scratch / "ipython"))
    kernels: dict[str, BenchKernel] = {}
    runs: list[dict[str, Any]] = []
    rss_before = 0.0
    try:
        for name in ("none", "sessions"):
            kernels[name] = start_kernel(name, env)
        for kernel in kernels.values():  # warm-up: JIT, Python workers
            kernel.ok(job_code(20))
        rss_before = psutil.Process(kernels["sessions"].pid).memory_info().rss / 2**20
        for round_number in range(1, args.rounds + 1):
            order = ["none", "sessions"] if round_number % 2 else ["sessions", "none"]
            for name in order:
                runs.append(measure(kernels[name], args.stages, round_number))
    finally:
        stoppers = [threading.Thread(target=shutdown, args=(k,)) for k in kernels.values()]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()

    ours = [r for r in runs if r["config"] == "sessions"]
    ratios = [
        s["wall_s"] / n["wall_s"]
        for s in ours
        for n in runs
        if n["config"] == "none" and n["round"] == s["round"]
    ]
    summary = {
        "benchmark": "many_stages",
        "stages": args.stages + 1,
        "tasks": 3 * args.stages,
        "rounds": args.rounds,
        "wall_s_none_median": statistics.median(r["wall_s"] for r in runs if r["config"] == "none"),
        "wall_s_sessions_median": statistics.median(r["wall_s"] for r in ours),
        "wall_ratio_median": statistics.median(ratios),
        "msgs_median": statistics.median(r["monitor_msgs"] for r in ours),
        "bytes_median": statistics.median(r["monitor_bytes"] for r in ours),
        "msgs_per_s_max": max(r["msgs_per_s"] for r in ours),
        "rate_limit": RATE_LIMIT,
        "largest_cell_view_bytes": max(r["largest_cell_view_bytes"] for r in ours),
        "output_limit": OUTPUT_LIMIT,
        "kernel_rss_mb_before": rss_before,
        "kernel_rss_mb_after": [r["kernel_rss_mb"] for r in ours],
        "errors": [r["error"] for r in runs if r["error"]],
        "measured_at": time.strftime("%Y-%m-%d"),
        "runs": runs,
    }
    summary["meets_targets"] = (
        not summary["errors"]
        and summary["msgs_per_s_max"] <= RATE_LIMIT
        and summary["largest_cell_view_bytes"] < OUTPUT_LIMIT
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    sys.exit(main())

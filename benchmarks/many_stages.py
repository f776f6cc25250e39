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


#: The size of what the job board holds, walked from the board object through the
#: objects it reaches: containers, scalars and this project's own objects (a thread,
#: a function, a py4j proxy or a module ends the walk: they are not the board's data).
BOARD_SIZE_CODE = """
def _jss_board_size():
    import gc, sys, types
    from jupyter_spark_sessions.app import default_app
    gc.collect()
    data = (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, type(None))
    def ours(obj):
        kind = type(obj)
        return kind in data or kind.__module__.startswith("jupyter_spark_sessions")
    board = default_app().board
    seen, stack, total, groups = {id(board)}, [board], 0, 0
    while stack:
        obj = stack.pop()
        total += sys.getsizeof(obj)
        groups += type(obj).__name__ == "GroupRecord"
        for ref in gc.get_referents(obj):
            if id(ref) not in seen and (ours(ref) or type(ref) is types.SimpleNamespace):
                seen.add(id(ref))
                stack.append(ref)
    return total, groups
print(*_jss_board_size())
"""
#: The most a later job may add to the board, against what it held after the first.
BOARD_GROWTH_PER_JOB = 0.05
#: How long the board is watched after a group ended, to see that it holds no more.
IDLE_S = 20.0


def board_size(kernel: BenchKernel) -> tuple[float, int]:
    """What the sessions kernel's board holds now (KB) and how many groups."""
    window = kernel.ok(BOARD_SIZE_CODE)
    size, groups = window.stdout.split()
    return int(size) / 1024, int(groups)


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
    if kernel.name == "sessions":  # the board right after the group ended, and later
        record["board_kb"], record["board_groups"] = board_size(kernel)
        time.sleep(IDLE_S)
        record["board_kb_idle"], _ = board_size(kernel)
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
    rss_before = board_before = 0.0
    try:
        for name in ("none", "sessions"):
            kernels[name] = start_kernel(name, env)
        for kernel in kernels.values():  # warm-up: JIT, Python workers
            kernel.ok(job_code(20))
        rss_before = psutil.Process(kernels["sessions"].pid).memory_info().rss / 2**20
        board_before, _ = board_size(kernels["sessions"])
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
        "board_kb_before": board_before,
        "board_kb_after": [r["board_kb"] for r in ours],
        "board_kb_idle": [r["board_kb_idle"] for r in ours],
        "idle_s": IDLE_S,
        "errors": [r["error"] for r in runs if r["error"]],
        "measured_at": time.strftime("%Y-%m-%d"),
        "runs": runs,
    }
    after, idle = summary["board_kb_after"], summary["board_kb_idle"]
    # Flat: nothing grows while the kernel is idle after a group ended, and each later
    # job adds no more than what the board keeps of an ended group (its jobs, their
    # stage ids: BOARD_GROWTH_PER_JOB of the first job's figure at most) until
    # `retained_groups` are kept.
    growth = (after[-1] - after[0]) / max(1, len(after) - 1)
    summary["board_kb_growth_per_job"] = growth
    summary["board_flat"] = growth <= after[0] * BOARD_GROWTH_PER_JOB and all(
        i <= a * 1.01 for a, i in zip(after, idle, strict=True)
    )
    summary["meets_targets"] = (
        summary["board_flat"]
        and not summary["errors"]
        and summary["msgs_per_s_max"] <= RATE_LIMIT
        and summary["largest_cell_view_bytes"] < OUTPUT_LIMIT
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    sys.exit(main())

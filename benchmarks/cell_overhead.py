"""Per-cell overhead of the extension, through real IPython kernels (jupyter_client).

Three kernels, driven as a frontend drives them (``tests/kernel_driver.py``):

- (a) a kernel without the extension;
- (b) ``%load_ext jupyter_spark_sessions``, no session (so no ``spark`` to bind);
- (c) the extension loaded, ``%spark_session create a --master local[2]`` and
  ``%spark_session use a``: every cell is bound to a managed session (its hooks tag the
  cell's jobs, the board's producer thread polls Spark in the background);
- (d) kernel (c) with ``spark`` set to ``None`` (a session exists, the cell is unbound).

Figures:

- the empty-cell round trip: from sending the ``execute_request`` of ``x = 1`` until
  both its ``execute_reply`` and its ``status: idle`` arrived. Each round starts fresh
  kernels (a), (b), (c) (a kernel process's own speed differs from another's by up to
  about 1 ms a cell on this VM, whatever runs in it), warms them up, then runs blocks of
  cells in turn on (a), (b), (c), (d) until each has ``--cells`` cells (default 200).
  Per round: each configuration's median, and the differences. Reported: the median over
  ``--rounds`` rounds (default 5) of each difference, with its range. Targets: (c) - (a)
  < 2 ms, (b) - (a) about 0 (< 0.25 ms). (c) - (d), in one kernel, is the binding's own
  cost, free of the between-process difference.
- py4j round trips per cell, in kernel (c): after the timing (so the counting does not
  slow what is timed), ``py4j.clientserver.ClientServerConnection.send_command`` (the
  connection PySpark 4.3 uses in its default pinned-thread mode; py4j's classic
  ``GatewayConnection.send_command`` is wrapped too) is wrapped in the kernel with a
  counter of calls made *from the thread that runs the cells* (the kernel's main thread;
  the board's producer and py4j's own threads are counted apart). Pre/post_run_cell hooks
  registered after the extension's split each cell's calls into "start" (the extension's
  pre_run_cell) and "end" (the cell body, empty here, plus the extension's
  post_run_cell). Counted over ``--count-cells`` bound cells (c) and unbound cells (d).
  Targets: at most 2 per bound cell (one at start, one at end), 0 per unbound cell.

Run: ``python benchmarks/cell_overhead.py`` (``--rounds N`` rounds of fresh kernels,
``--cells N`` cells per configuration and round; ``--quick``: 2 rounds of 60 cells,
results to a temp file). Writes
benchmarks/results/cell_overhead.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kernel_driver import Kernel  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "cell_overhead.json"
CONFIGS = ("a_no_extension", "b_extension_no_session", "c_bound", "d_session_unbound")
BLOCK = 25  # cells per block; configurations take turns block by block
TARGETS = {
    "bound_minus_plain_ms": 2.0,
    "loaded_minus_plain_ms": 0.25,
    "round_trips_per_bound_cell": 2,
    "round_trips_per_unbound_cell": 0,
}

# Installed in kernel (c) for the count (benchmark only; never in the package).
COUNTER = r"""
import threading as _t
from collections import Counter as _C
import py4j.clientserver as _cs, py4j.java_gateway as _jg
from pyspark import SparkContext as _SC

_jss_rt = {"main": 0, "other": 0, "at_pre": 0, "at_post": 0, "in_cell": False,
           "cells": [], "labels": _C(), "gateway": type(_SC._gateway).__name__}
_jss_main = _t.main_thread().ident

def _jss_label(command):
    lines = command.split("\n")
    if lines[0] == "c" and len(lines) > 2:  # call: target, method
        target = lines[1]
        return "call " + (target[2:] + "." if target.startswith("z:") else "") + lines[2]
    return " ".join(lines[:2])

def _jss_wrap(cls):
    original = cls.send_command
    def send_command(self, command, *args, **kwargs):
        if _t.get_ident() == _jss_main:
            _jss_rt["main"] += 1
            _jss_rt["labels"][_jss_label(command)] += 1
        else:
            _jss_rt["other"] += 1
        return original(self, command, *args, **kwargs)
    cls.send_command = send_command

_jss_wrap(_cs.ClientServerConnection)
_jss_wrap(_jg.GatewayConnection)

def _jss_pre_execute():
    # Before every pre_run_cell hook: what ran since the last cell's end was between
    # the cells (the end of a cell's work the extension does after its reply).
    _jss_rt["between"] = _jss_rt["main"] - _jss_rt["at_post"]
    _jss_rt["at_pre_execute"] = _jss_rt["main"]

def _jss_pre(info):
    _jss_rt["start"] = _jss_rt["main"] - _jss_rt["at_pre_execute"]
    _jss_rt["at_pre"] = _jss_rt["main"]
    _jss_rt["in_cell"] = True
    _jss_rt["on_main"] = _t.get_ident() == _jss_main

def _jss_post(result):
    if _jss_rt["in_cell"]:
        end = _jss_rt["main"] - _jss_rt["at_pre"]
        labels, _jss_rt["labels"] = dict(_jss_rt["labels"]), _C()
        _jss_rt["cells"].append(
            (_jss_rt["start"], end, labels, _jss_rt["on_main"], _jss_rt["between"])
        )
    _jss_rt["at_post"] = _jss_rt["main"]
    _jss_rt["in_cell"] = False

_jss_rt["between"] = 0
_jss_rt["at_pre_execute"] = 0
# After the extension's hooks: they run in registration order; pre_execute fires before
# any pre_run_cell hook.
get_ipython().events.register("pre_execute", _jss_pre_execute)
get_ipython().events.register("pre_run_cell", _jss_pre)
get_ipython().events.register("post_run_cell", _jss_post)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of fresh kernels")
    parser.add_argument("--cells", type=int, default=200, help="timed cells per config and round")
    parser.add_argument("--count-cells", type=int, default=50, help="cells for the py4j count")
    parser.add_argument("--quick", action="store_true", help="small and fast, for development")
    parser.add_argument("--output", type=Path, help="where to write the JSON result")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.cells, args.count_cells = 2, 60, 10
    output = args.output or (
        Path(tempfile.gettempdir()) / "cell_overhead.quick.json" if args.quick else RESULTS
    )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    rounds = []
    counts: dict[str, Any] = {}
    for number in range(args.rounds):
        last = number == args.rounds - 1
        with _kernels() as kernels:
            rounds.append(measure_round(kernels, args.cells))
            if last:  # after the timing, so the counting does not slow what is timed
                counts = _count_round_trips(kernels["c"], args.count_cells)
        print(f"round {number + 1}: {json.dumps(rounds[-1]['median'])}", file=sys.stderr)
    result = summarize(rounds, args.cells, counts)
    result["quick"] = bool(args.quick)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {output}")


@contextlib.contextmanager
def _kernels() -> Iterator[dict[str, Kernel]]:
    kernels: dict[str, Kernel] = {}
    ipython_dir = tempfile.mkdtemp(prefix="jss-bench-ipython-")  # no history in ~/.ipython
    try:
        env = {"IPYTHONDIR": ipython_dir, "PYSPARK_PYTHON": sys.executable}
        for name in ("a", "b", "c"):
            kernels[name] = Kernel(env=env)
        kernels["b"].ok("%load_ext jupyter_spark_sessions")
        kernels["c"].ok("%load_ext jupyter_spark_sessions")
        kernels["c"].ok("%spark_session create a --master local[2]", timeout=180)
        kernels["c"].ok("%spark_session use a")
        kernels["c"].ok("spark.range(3).collect()")  # the session's first query, once
        kernels["c"].ok("_jss_bound = spark")
        yield kernels
    finally:
        for kernel in kernels.values():
            try:
                kernel.shutdown()
            except Exception as exc:  # shut the others down anyway
                print(f"kernel shutdown failed: {exc!r}", file=sys.stderr)
            shutil.rmtree(kernel._spec_root, ignore_errors=True)
        shutil.rmtree(ipython_dir, ignore_errors=True)


def measure_round(kernels: dict[str, Kernel], cells: int) -> dict[str, Any]:
    """One round on fresh kernels: each configuration's cells, in alternating blocks."""
    # (d) is kernel (c) with `spark` unbound: each block first sets the binding.
    kernel_of = {"a_no_extension": "a", "b_extension_no_session": "b"}
    kernel_of |= {"c_bound": "c", "d_session_unbound": "c"}
    binding = {"c_bound": "spark = _jss_bound", "d_session_unbound": "spark = None"}

    def block(config: str, count: int) -> list[float]:
        kernel = kernels[kernel_of[config]]
        if config in binding:
            kernel.ok(binding[config])
        return [_round_trip_ms(kernel, "x = 1") for _ in range(count)]

    for config in CONFIGS:  # warm-up
        block(config, BLOCK)
    times: dict[str, list[float]] = {c: [] for c in CONFIGS}
    cycles: list[dict[str, float]] = []  # per cycle of blocks: each block's median
    while any(len(t) < cells for t in times.values()):
        cycle = {}
        for config in CONFIGS:
            timed = block(config, min(BLOCK, cells - len(times[config])))
            times[config] += timed
            cycle[config] = statistics.median(timed)
        cycles.append(cycle)
    median = {c: statistics.median(t) for c, t in times.items()}
    kernels["c"].ok("spark = _jss_bound")
    return {"median": median, "times": times, "cycles": cycles}


def summarize(rounds: list[dict[str, Any]], cells: int, counts: dict[str, Any]) -> dict[str, Any]:
    """Medians over rounds of each round's differences, with their ranges."""

    def over_rounds(config: str, baseline: str = "a_no_extension") -> dict[str, Any]:
        each = [r["median"][config] - r["median"][baseline] for r in rounds]
        return {"median": statistics.median(each), "min": min(each), "max": max(each), "each": each}

    everything = {c: [t for r in rounds for t in r["times"][c]] for c in CONFIGS}
    cycles = [c for r in rounds for c in r["cycles"]]
    bound, loaded = over_rounds("c_bound"), over_rounds("b_extension_no_session")
    unbound, binding = over_rounds("d_session_unbound"), over_rounds("c_bound", "d_session_unbound")
    result: dict[str, Any] = {
        "benchmark": "cell_overhead",
        "rounds": len(rounds),
        "cells_per_round": cells,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cell": "x = 1",
        "round_trip_ms_median": {c: statistics.median(t) for c, t in everything.items()},
        "round_trip_ms_p90": {c: statistics.quantiles(t, n=10)[-1] for c, t in everything.items()},
        "round_medians_ms": [r["median"] for r in rounds],
        "bound_minus_plain_ms": bound["median"],
        "bound_minus_plain_ms_range": [bound["min"], bound["max"]],
        "loaded_minus_plain_ms": loaded["median"],
        "loaded_minus_plain_ms_range": [loaded["min"], loaded["max"]],
        "unbound_minus_plain_ms": unbound["median"],
        "unbound_minus_plain_ms_range": [unbound["min"], unbound["max"]],
        # In one kernel: what binding `spark` costs, without the between-process part.
        "bound_minus_unbound_ms": binding["median"],
        "bound_minus_unbound_ms_range": [binding["min"], binding["max"]],
        # The median over all cycles of the difference between neighbouring blocks.
        "bound_minus_plain_ms_paired": _paired(cycles, "c_bound"),
        "loaded_minus_plain_ms_paired": _paired(cycles, "b_extension_no_session"),
        **counts,
        "targets": TARGETS,
    }
    result["meets_targets"] = (
        result["bound_minus_plain_ms"] < TARGETS["bound_minus_plain_ms"]
        and abs(result["loaded_minus_plain_ms"]) < TARGETS["loaded_minus_plain_ms"]
        and result["round_trips_per_bound_cell"] <= TARGETS["round_trips_per_bound_cell"]
        and result["round_trips_per_unbound_cell"] <= TARGETS["round_trips_per_unbound_cell"]
    )
    return result


def _paired(cycles: list[dict[str, float]], config: str) -> float:
    return statistics.median(c[config] - c["a_no_extension"] for c in cycles)


def _round_trip_ms(kernel: Kernel, code: str) -> float:
    """One execute_request until both its reply and its idle status arrived."""
    client = kernel.client
    started = time.perf_counter()
    msg_id = client.execute(code)
    idle = replied = False
    while not (idle and replied):
        if not idle:
            try:
                msg = client.get_iopub_msg(timeout=30)
            except Empty:
                raise TimeoutError("no idle status within 30 s") from None
            if msg["parent_header"].get("msg_id") == msg_id:
                state = msg["content"].get("execution_state")
                idle = msg["msg_type"] == "status" and state == "idle"
        if idle and not replied:
            reply = client.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                if reply["content"]["status"] != "ok":
                    raise RuntimeError(f"{code!r} failed: {reply['content']}")
                replied = True
    return (time.perf_counter() - started) * 1000


def _count_round_trips(kernel: Kernel, cells: int) -> dict[str, Any]:
    kernel.ok(COUNTER)
    per_config: dict[str, Any] = {}
    for config, bind in (("bound", "spark = _jss_bound"), ("unbound", "spark = None")):
        kernel.ok(bind)
        kernel.ok("pass")  # the first cell with the new binding starts from it
        for _ in range(cells):
            kernel.ok("x = 1")
        # One read (a cell of its own, appended to the list after it ran).
        counted = kernel.value(f"_jss_rt['cells'][-{cells}:]")
        # A cell's calls after its reply are counted before the next cell's start: each
        # cell but the last, with the next one's "between".
        afters = [following[4] for following in counted[1:]]
        counted = counted[:-1]
        total: Counter[str] = Counter()
        for entry in counted:
            total.update(entry[2])
        starts = [c[0] for c in counted]
        ends = [c[1] + after for c, after in zip(counted, afters, strict=True)]
        per_config[config] = {
            "start": statistics.median(starts),
            "end": statistics.median(ends),
            "after_reply": statistics.median(afters),
            "per_cell_mean": (sum(starts) + sum(ends)) / len(counted),
            "per_cell_max": max(s + e for s, e in zip(starts, ends, strict=True)),
            "cells_on_main_thread": all(c[3] for c in counted),
            "calls_per_cell": {k: v / len(counted) for k, v in sorted(total.items())},
        }
    other = kernel.value("_jss_rt['other']")
    gateway = kernel.value("_jss_rt['gateway']")
    kernel.ok("spark = _jss_bound")
    bound, unbound = per_config["bound"], per_config["unbound"]
    return {
        "count_cells": cells,
        "py4j_gateway": gateway,
        "round_trips_per_bound_cell": bound["start"] + bound["end"],
        "round_trips_bound_start": bound["start"],
        "round_trips_bound_end": bound["end"],
        "round_trips_bound_end_after_reply": bound["after_reply"],
        "round_trips_per_bound_cell_max": bound["per_cell_max"],
        "round_trips_per_unbound_cell": unbound["start"] + unbound["end"],
        "round_trips_per_unbound_cell_max": unbound["per_cell_max"],
        "bound_calls_per_cell": bound["calls_per_cell"],
        "unbound_calls_per_cell": unbound["calls_per_cell"],
        "cells_ran_on_main_thread": bound["cells_on_main_thread"]
        and unbound["cells_on_main_thread"],
        "round_trips_other_threads_total": other,
    }


if __name__ == "__main__":
    main()

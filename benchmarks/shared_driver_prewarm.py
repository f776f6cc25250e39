"""The shared driver's warm start (``shared_driver_prewarm``): the first notebook's first
result on a pre-warmed shared driver against plain PySpark's own driver, in one run.

Each round, in ABBA order:

(a) pre-warmed: a real Jupyter server started with ``shared_driver_prewarm = True``
    (master ``local[2]``, the rendezvous in the server's runtime folder); once the
    shared driver is warm (its record says it runs), a notebook's kernel is opened
    through the server and, from the kernel being ready (after ``%load_ext``), timed
    until the reply of ``%spark_session create a --remote shared`` then of a
    ``%%spark_session a`` cell running ``spark.range(1000).selectExpr('sum(id)').collect()``.
    The Jupyter server is stopped after each round (every process it started checked
    gone), so each round's driver is one that no notebook used yet.
(b) plain PySpark: a kernel without the extension, timed from ready until the reply of
    one cell ``spark = SparkSession.builder.master('local[2]').getOrCreate()`` and the
    same query.

Target: median (a) / median (b) <= 0.25 (moonshot 0.1). Also recorded: how long the
driver took to become warm after the Jupyter server started; the resident memory (RSS)
of the warm idle driver (its JVM, its keeper) before any notebook; and, in the last
pre-warmed round, how long after its only notebook shut down the idle driver stopped
(``shared_driver_idle_timeout`` is ``IDLE`` seconds here; 600 by default).

Run: ``python benchmarks/shared_driver_prewarm.py`` (``--rounds N``; ``--quick``: 1 round,
results to a temp file); writes benchmarks/results/shared_driver_prewarm.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_shared_driver_kernel import _open_notebook  # a notebook's kernel, through the server
from test_spark_ui_proxy import JupyterServer  # a real Jupyter server, its own runtime folder

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous, ServerRecord
from kernel_driver import Kernel  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "shared_driver_prewarm.json"
ROUNDS = 3
MASTER = "local[2]"
IDLE = 15.0
TARGETS = {"first_result_ratio": 0.25, "first_result_moonshot": 0.1}
PREWARM = (
    "c.SparkSessionsConfig.shared_driver_prewarm = True\n"
    f"c.SparkSessionsConfig.shared_driver_master = {MASTER!r}\n"
    f"c.SparkSessionsConfig.shared_driver_idle_timeout = {IDLE}\n"
)
QUERY = "spark.range(1000).selectExpr('sum(id)').collect()[0][0]"
SHARED_CELLS = (
    "%spark_session create a --remote shared",
    f"%%spark_session a\nprint('SUM', {QUERY})",
)
PLAIN_CELL = (
    "from pyspark.sql import SparkSession\n"
    f"spark = SparkSession.builder.master({MASTER!r}).getOrCreate()\n"
    f"print('SUM', {QUERY})"
)
SUM = 499500


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _running(rendezvous: Rendezvous) -> ServerRecord | None:
    record = rendezvous.read()
    return record if record is not None and record.state == "running" else None


def _wait(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20


def prewarmed_round(base: Path, last: bool) -> dict[str, Any]:
    started = time.monotonic()
    server = JupyterServer(base, kernel_config=PREWARM)
    seen: list[psutil.Process] = []
    try:
        rendezvous = Rendezvous(server.runtime_dir)
        record = _wait(lambda: _running(rendezvous), 180, "the warm driver")
        warm_s = time.monotonic() - started
        seen += [psutil.Process(record.server_pid), psutil.Process(record.keeper.pid)]
        idle_memory = {
            "jvm_mb": _rss_mb(record.server_pid),
            "keeper_mb": _rss_mb(record.keeper.pid),
        }
        _, kernel = _open_notebook(server, "first.ipynb")
        try:
            began = time.perf_counter()
            outs = [kernel.ok(cell).stdout for cell in SHARED_CELLS]
            first_s = time.perf_counter() - began
            if f"SUM {SUM}" not in outs[-1]:
                raise AssertionError(f"wrong first result: {outs!r}")
            joined = "Starting the shared Spark driver" not in outs[0]
        finally:
            kernel.close()
        stopped_after = None
        if last:  # its only notebook goes: the idle driver stops after IDLE seconds
            left = time.monotonic()
            for each in server.api("GET", "api/kernels"):
                server.api("DELETE", f"api/kernels/{each['id']}")
            _wait(lambda: rendezvous.read() is None, IDLE + 60, "the idle stop")
            stopped_after = time.monotonic() - left
        return {
            "first_result_s": first_s,
            "warm_after_server_start_s": warm_s,
            "idle_memory": idle_memory,
            "joined_the_warm_driver": joined,
            "idle_stop_s": stopped_after,
        }
    finally:
        server.stop()
        _, alive = psutil.wait_procs(seen, timeout=30)
        if alive:
            for process in alive:
                process.kill()
            raise AssertionError(f"left running after the Jupyter server stopped: {alive}")


def plain_round(base: Path) -> dict[str, Any]:
    cwd = base / "plain"
    cwd.mkdir(parents=True)
    kernel = Kernel(env={"IPYTHONDIR": str(base / "ipython")}, cwd=str(cwd))
    try:
        kernel.ok("1")  # ready
        began = time.perf_counter()
        out = kernel.ok(PLAIN_CELL, 300).stdout
        first_s = time.perf_counter() - began
        if f"SUM {SUM}" not in out:
            raise AssertionError(f"wrong first result: {out!r}")
        return {"first_result_s": first_s}
    finally:
        kernel.shutdown()
        shutil.rmtree(kernel._spec_root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--quick", action="store_true", help="1 round, to a temp file")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    quick_output = Path(tempfile.gettempdir()) / "shared_driver_prewarm.quick.json"
    output = quick_output if args.quick else RESULTS
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    load_before = os.getloadavg()[0]
    prewarmed: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    root = Path(tempfile.mkdtemp(prefix="jss-bench-prewarm-"))
    try:
        plain_round(root / "warm-cache")  # unmeasured: the disk cache warm for both
        for index in range(rounds):
            order = ("a", "b") if index % 2 == 0 else ("b", "a")
            for side in order:
                base = root / f"{side}{index}"
                base.mkdir()
                if side == "a":
                    prewarmed.append(prewarmed_round(base, last=index == rounds - 1))
                    log(f"round {index}: pre-warmed {prewarmed[-1]['first_result_s']:.2f} s")
                else:
                    plain.append(plain_round(base))
                    log(f"round {index}: plain {plain[-1]['first_result_s']:.2f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    warm = statistics.median(r["first_result_s"] for r in prewarmed)
    own = statistics.median(r["first_result_s"] for r in plain)
    ratio = warm / own
    result = {
        "benchmark": "shared_driver_prewarm",
        "rounds": rounds,
        "quick": args.quick,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
        "master": MASTER,
        "idle_timeout_s": IDLE,
        "prewarmed": prewarmed,
        "plain": plain,
        "first_result_s": {"prewarmed": warm, "plain": own},
        "first_result_ratio": ratio,
        "targets": TARGETS,
        "meets_target": ratio <= TARGETS["first_result_ratio"]
        and all(r["joined_the_warm_driver"] for r in prewarmed),
        "meets_moonshot": ratio <= TARGETS["first_result_moonshot"],
    }
    output.write_text(json.dumps(result, indent=2) + "\n")
    log(f"first result: pre-warmed {warm:.2f} s / plain {own:.2f} s = {ratio:.3f}")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()

"""The extension's own cost on a Spark Connect session: a session of the shared driver with
jupyter_spark_sessions against a plain Spark Connect client on the same server, in one
run (issue 50).

Two real kernels: (a) with the extension, ``%spark_session create a --remote shared``
then ``use a`` (every cell after it bound: the cell's scope, its job group, the board's
polls and the in-cell progress all at work, as a user has them); (b) without it, one
cell ``SparkSession.builder.remote(URL).getOrCreate()`` with the same server's URL (and
token, from its record). Each runs, in ABBA order after one unmeasured run each:

- the 20,000-task job of ``spark_auth_cost`` (a JVM-only job with 20,000 tasks:
  ``spark.range(0, 20000, 1, 20000).write.format('noop')...save()``), timed in the cell
  and at the client (the execute request's round trip);
- an empty cell (``pass``), timed at the client: what every cell pays.

Target: median (a) / median (b) <= 1.03 for the job (in the cell); the empty cell's
difference is given in milliseconds.

Run: ``python benchmarks/connect_client_cost.py`` (``--rounds N``, ``--quick``: 2 rounds,
results to a temp file); writes benchmarks/results/connect_client_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from shared_driver_processes import kill_recorded_server

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous
from kernel_driver import Kernel  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "connect_client_cost.json"
TARGET = 1.03
JOB = "spark.range(0, 20000, 1, 20000).write.format('noop').mode('overwrite').save()"
TIMED = (
    "import time as _time\n"
    "_started = _time.perf_counter()\n"
    f"{JOB}\n"
    "print('ELAPSED', _time.perf_counter() - _started)"
)
EMPTY_ROUNDS = 30


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def kernel_in(base: Path, label: str, profile: str) -> Kernel:
    ipython = base / label / "ipython"
    (ipython / "profile_default").mkdir(parents=True)
    (ipython / "profile_default" / "ipython_config.py").write_text(profile)
    cwd = base / label / "cwd"
    cwd.mkdir()
    return Kernel(env={"IPYTHONDIR": str(ipython)}, cwd=str(cwd))


def job(kernel: Kernel) -> dict[str, float]:
    started = time.perf_counter()
    out = kernel.ok(TIMED, 900).stdout
    cell = time.perf_counter() - started
    line = next(ln for ln in out.splitlines() if ln.startswith("ELAPSED "))
    return {"in_cell_s": float(line.split()[1]), "cell_s": cell}


def empty(kernel: Kernel) -> float:
    started = time.perf_counter()
    kernel.ok("pass")
    return time.perf_counter() - started


def settle(server_pid: int) -> None:
    """A full GC of the server before each run: the status store of the runs before
    (20,000 tasks each, kept up to Spark's retainedTasks) otherwise makes a run's GC
    pauses depend on its place in the order more than on its side."""
    subprocess.run(["jcmd", str(server_pid), "GC.run"], capture_output=True, timeout=60)
    time.sleep(1.0)


def measure(sides: dict[str, Kernel], rounds: int, server_pid: int) -> dict[str, Any]:
    for kernel in sides.values():  # unmeasured: the first run of a job pays the JIT
        job(kernel)
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    empties: dict[str, list[float]] = {side: [] for side in sides}
    for number in range(rounds):
        order = ("extension", "plain") if number % 2 == 0 else ("plain", "extension")
        for side in order:
            settle(server_pid)
            runs[side].append(job(sides[side]))
            log(f"  {side:9} job in the cell {runs[side][-1]['in_cell_s']:.2f} s")
    for number in range(EMPTY_ROUNDS):
        order = ("extension", "plain") if number % 2 == 0 else ("plain", "extension")
        for side in order:
            empties[side].append(empty(sides[side]))
    median = {
        side: {
            "job_in_cell_s": statistics.median(r["in_cell_s"] for r in runs[side]),
            "job_cell_s": statistics.median(r["cell_s"] for r in runs[side]),
            "empty_cell_ms": statistics.median(empties[side]) * 1000,
        }
        for side in sides
    }
    ext, plain = median["extension"], median["plain"]
    return {
        "runs": runs,
        "empty_cells_s": empties,
        "median": median,
        "job_ratio": ext["job_in_cell_s"] / plain["job_in_cell_s"],
        "job_cell_ratio": ext["job_cell_s"] / plain["job_cell_s"],
        "empty_cell_extra_ms": ext["empty_cell_ms"] - plain["empty_cell_ms"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    base = Path(tempfile.mkdtemp(prefix="jss-connect-cost-"))
    folder = base / "shared"
    folder.mkdir()
    profile = (
        f"c.SparkSessionsConfig.shared_driver_dir = {str(folder)!r}\n"
        "c.SparkSessionsConfig.shared_driver_master = 'local[2]'\n"
    )
    load = {"before": os.getloadavg()[0]}
    extension = kernel_in(base, "extension", profile)
    plain = None
    try:
        extension.ok("%load_ext jupyter_spark_sessions")
        extension.ok("%spark_session create a --remote shared\n%spark_session use a")
        record = Rendezvous(folder).read()
        assert record is not None and record.state == "running", record
        plain = kernel_in(base, "plain", "")
        plain.ok(
            "from pyspark.sql import SparkSession\n"
            f"spark = SparkSession.builder.remote({record.url!r}).getOrCreate()"
        )
        assert "jupyter_spark_sessions" not in plain.value("sorted(__import__('sys').modules)")
        sides = {"extension": extension, "plain": plain}
        result = measure(sides, rounds, record.server_pid)
    finally:
        extension.shutdown()
        if plain is not None:
            plain.shutdown()
        kill_recorded_server(folder)
        shutil.rmtree(base, ignore_errors=True)
    load["after"] = os.getloadavg()[0]
    import pyspark

    out = {
        "benchmark": "connect_client_cost",
        "rounds": rounds,
        "target": TARGET,
        "meets_target": result["job_ratio"] <= TARGET,
        "load_average_1m": load,
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(),
            "pyspark": pyspark.__version__,
        },
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **result,
    }
    path = Path(tempfile.mkstemp(suffix=".json")[1]) if args.quick else RESULTS
    path.write_text(json.dumps(out, indent=1) + "\n")
    log(
        f"job: extension / plain = {result['job_ratio']:.3f} "
        f"(cell {result['job_cell_ratio']:.3f}); "
        f"empty cell +{result['empty_cell_extra_ms']:.1f} ms; written to {path}"
    )


if __name__ == "__main__":
    main()

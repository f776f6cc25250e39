"""Kernel shutdown (what a restart waits for) with Spark sessions, against the same
kernel running PySpark without this project, and a kernel without Spark.

Each round starts three real kernels (jupyter_client, the ``python3`` kernel of this
interpreter), alternating:

- no Spark: the kernel only;
- PySpark alone: a SparkSession on ``local[2]`` ran one query;
- jupyter_spark_sessions: ``%load_ext``, ``create a``, one query in ``a``.

and times ``shutdown_kernel`` (a shutdown request, then waiting for the process to
exit; the server-side kill after 5 s is switched off so the real duration shows).
ipykernel re-signals its children until none is left and counts a dead, unreaped JVM
as one, so PySpark alone waits ~30 s; the extension reaps it. Target: shutdown with the
extension at most as long as with PySpark alone (ratio <= 1.0).

Run: ``python benchmarks/kernel_shutdown.py`` (``make bench`` runs it too).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import KernelManager

ROUNDS = 3
RESULTS = Path(__file__).parent / "results" / "kernel_shutdown.json"

PYSPARK_ALONE = (
    "from pyspark.sql import SparkSession\n"
    "s = SparkSession.builder.master('local[2]').config('spark.ui.enabled', 'false')"
    ".getOrCreate()\n"
    "assert s.range(3).count() == 3"
)
WITH_EXTENSION = (
    "%load_ext jupyter_spark_sessions\n"
    "%spark_session create a\n"
    "%spark_session use a\n"
    "assert spark.range(3).count() == 3"
)
VARIANTS = {"no_spark": "1 + 1", "pyspark_alone": PYSPARK_ALONE, "extension": WITH_EXTENSION}


def shutdown_seconds(code: str, ipython_dir: str) -> float:
    """Start a kernel, run ``code``, and time its shutdown."""
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env={**os.environ, "IPYTHONDIR": ipython_dir})
    client = manager.blocking_client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(code, timeout=300, output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"setup cell failed: {reply['content']}")
    finally:
        client.stop_channels()
    manager.shutdown_wait_time = 120
    started = time.perf_counter()
    manager.shutdown_kernel(now=False)
    return time.perf_counter() - started


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    ipython_dir = tempfile.mkdtemp(prefix="jss-bench-ipython-")  # no user startup files
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for round_number in range(ROUNDS):
        for name, code in VARIANTS.items():
            seconds = shutdown_seconds(code, ipython_dir)
            times[name].append(seconds)
            print(f"round {round_number + 1}: {name} shutdown {seconds:.2f} s", flush=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["extension"] / medians["pyspark_alone"]
    result = {
        "benchmark": "kernel_shutdown",
        "rounds": ROUNDS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "shutdown_s_median": medians,
        "shutdown_s_all": times,
        "ratio": ratio,
        "meets_targets": ratio <= 1.0,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

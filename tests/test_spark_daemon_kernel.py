"""The Python workers of a context this project starts are found as Apache Spark's
debugging guide finds them, ``ps -fe | grep pyspark.daemon`` (``backends/spark_daemon.py``
replaces itself with ``python -m pyspark.daemon``), and stay out of the kernel's process
group, through the run's shared kernel."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from kernel_driver import Kernel

UDF = """
from pyspark.sql.functions import udf

@udf('long')
def _held(x, _gate={gate!r}):
    import os, time
    while os.path.exists(_gate):
        time.sleep(0.05)
    return x

_rows = spark.range(0, 2, 1, 2).select(_held('id').alias('v')).collect()
"""


def pyspark_daemons(kernel_pid: int) -> dict[int, int]:
    """{pid: parent pid} of the lines of ``ps -fe`` that name pyspark.daemon, for the
    processes below the kernel (other kernels may run on this machine). ``-ww``: ps cuts
    lines at the terminal's width otherwise (80 columns under pytest)."""
    listing = subprocess.run(
        ["ps", "-ww", "-fe"], capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in listing.splitlines()[1:]:
        if "pyspark.daemon" not in line:
            continue
        pid, ppid = (int(field) for field in line.split()[1:3])
        try:
            if kernel_pid in {p.pid for p in psutil.Process(pid).parents()}:
                found[pid] = ppid
        except psutil.NoSuchProcess:  # a worker that just ended
            continue
    return found


def udf_workers(daemons: dict[int, int]) -> set[int]:
    """Those of ``daemons`` that run ``pyspark.worker`` (a process that just ended: not)."""
    found = set()
    for pid in daemons:
        try:
            if "pyspark.worker" in psutil.Process(pid).cmdline():
                found.add(pid)
        except psutil.NoSuchProcess:
            continue
    return found


def group(pid: int) -> int | None:
    """The process group of ``pid``; None when it ended meanwhile."""
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


@pytest.mark.spark
@pytest.mark.kernel
def test_ps_finds_the_python_workers_by_pyspark_daemon_while_a_udf_runs(
    kernel: Kernel, tmp_path: Path
) -> None:
    kernel.ok("%spark_session create w")
    kernel.ok("%spark_session use w")
    kernel_pid = kernel.value("__import__('os').getpid()")
    gate = tmp_path / "gate"
    gate.write_text("")
    busy = kernel.client.execute(UDF.format(gate=str(gate)))
    try:
        deadline = time.monotonic() + 90
        while True:
            daemons = pyspark_daemons(kernel_pid)
            # A worker is a daemon's fork: its parent is in the list too. (pyspark.worker:
            # a UDF's; a daemon of Spark's other workers may run too.)
            udf = udf_workers(daemons)
            workers = [pid for pid, ppid in daemons.items() if ppid in daemons and pid in udf]
            if len(workers) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(workers) >= 2, f"ps -fe shows no pyspark.daemon workers of the UDF: {daemons}"
        for pid in daemons:
            try:
                command = psutil.Process(pid).cmdline()
            except psutil.NoSuchProcess:  # an idle worker of an earlier test, ended by Spark
                continue
            # As plain PySpark's: `-m pyspark.daemon` and the worker module (pyspark.worker
            # for a UDF; Spark's others, e.g. pyspark.sql.worker.lookup_data_sources, which
            # a two-part table name makes it run once); ours also names its starter last
            # (test_private_apis), but the run's shared kernel may hold a context another
            # module's plain PySpark made.
            assert command[1:3] == ["-m", "pyspark.daemon"], command
            assert command[3].startswith("pyspark."), command
        kernel_group = os.getpgid(kernel_pid)
        assert all(group(pid) != kernel_group for pid in daemons), (
            "the Python workers are in the kernel's process group: an Interrupt kills them all"
        )
    finally:
        gate.unlink()
    result = kernel.collect(busy, timeout=120)
    assert result.status == "ok", f"{result.error_name}: {result.error_value[:300]}"
    assert kernel.value("sorted(r.v for r in _rows)") == [0, 1]

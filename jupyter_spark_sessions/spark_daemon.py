"""PySpark's Python worker daemon, in a process group of its own, with the modules
every UDF's worker needs already imported.

On a local master the daemon (and the workers it forks) would share the kernel's
process group, and the kernel's Interrupt (SIGINT sent to that group) would kill the
Python tasks of every session, not only those of the interrupted cell. Contexts this
project starts on a local master run this module instead of ``pyspark.daemon``
(``spark.python.daemon.module``): the cell's own jobs are cancelled by the Interrupt
handler (``interrupt.py``), the others keep running. The daemon still exits with the
JVM (it watches its standard input).

Each isolated session has a daemon of its own, and every worker it forks (one per
concurrent task, again after a cancelled task's worker is ended) would import pandas
and pyarrow before its first UDF: PySpark 4 runs Python UDFs through Arrow. Imported
here once, before the forks, a worker starts without that second of CPU.
"""

from __future__ import annotations

import importlib
import os

#: What a UDF's worker imports first (pyspark.worker's read_udfs and its serializers).
PRELOADED = ("pandas", "pyarrow", "pyspark.sql.pandas.serializers")


def preload() -> None:
    for module in PRELOADED:
        try:
            importlib.import_module(module)
        except Exception:  # missing or broken: the worker imports it and reports it itself
            continue


if __name__ == "__main__":
    from pyspark import daemon

    os.setpgid(0, 0)
    preload()
    daemon.manager()

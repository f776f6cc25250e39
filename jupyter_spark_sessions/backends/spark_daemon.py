"""PySpark's Python worker daemon, in a process group of its own.

On a local master the daemon (and the workers it forks) would share the kernel's
process group, and the kernel's Interrupt (SIGINT sent to that group) would kill the
Python tasks of every session, not only those of the interrupted cell. Contexts this
project starts on a local master run this module instead of ``pyspark.daemon``
(``spark.python.daemon.module``): the cell's own jobs are cancelled by the Interrupt
handler (``cells/interrupt.py``), the others keep running. The daemon still exits with the
JVM (it watches its standard input).

The module leaves the kernel's group before it imports PySpark, then replaces itself
(``exec``) with ``python -m pyspark.daemon`` and the arguments Spark gave (the worker
module): the process group and the pipes to the JVM survive the exec, and the daemon and
its workers read ``python -m pyspark.daemon pyspark.worker ...`` in ``ps``, where Spark's
debugging guide finds them (``ps -fe | grep pyspark.daemon``, for py-spy or memory
profiling). The last word of that command line names this module, which started it
(``pyspark.daemon`` reads only the first, the worker module); the workers no longer
carry this package's imports either.
"""

from __future__ import annotations

import os
import sys

_MODULE = "jupyter_spark_sessions.backends.spark_daemon"

if __name__ == "__main__":
    os.setpgid(0, 0)
    if sys.executable:
        os.execv(
            sys.executable,
            [sys.executable, "-m", "pyspark.daemon", *sys.argv[1:], _MODULE],
        )
    from pyspark import daemon  # no interpreter to exec: run it here

    daemon.manager()

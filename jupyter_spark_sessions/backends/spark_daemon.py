"""PySpark's Python worker daemon, in a process group of its own.

On a local master the daemon (and the workers it forks) would share the kernel's
process group, and the kernel's Interrupt (SIGINT sent to that group) would kill the
Python tasks of every session, not only those of the interrupted cell. Contexts this
project starts on a local master run this module instead of ``pyspark.daemon``
(``spark.python.daemon.module``): the cell's own jobs are cancelled by the Interrupt
handler (``cells/interrupt.py``), the others keep running. The daemon still exits with the
JVM (it watches its standard input).
"""

from __future__ import annotations

import os

if __name__ == "__main__":
    from pyspark import daemon

    os.setpgid(0, 0)
    daemon.manager()

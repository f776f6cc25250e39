"""PySpark's Python worker daemon, in a process group of its own, importing the installed
PySpark.

On a local master the daemon (and the workers it forks) would share the kernel's
process group, and the kernel's Interrupt (SIGINT sent to that group) would kill the
Python tasks of every session, not only those of the interrupted cell. Contexts and
local Spark Connect servers this project starts on a local master run this module
instead of ``pyspark.daemon`` (``spark.python.daemon.module``): the cell's own jobs are
cancelled by the Interrupt handler (``cells/interrupt.py``), the others keep running.
The daemon still exits with the JVM (it watches its standard input).

The module leaves the kernel's group before it imports PySpark, then replaces itself
(``exec``) with ``python -m pyspark.daemon`` and the arguments Spark gave (the worker
module): the process group and the pipes to the JVM survive the exec, and the daemon and
its workers read ``python -m pyspark.daemon pyspark.worker ...`` in ``ps``, where Spark's
debugging guide finds them (``ps -fe | grep pyspark.daemon``, for py-spy or memory
profiling). The last word of that command line names this module, which started it
(``pyspark.daemon`` reads only the first, the worker module); the workers no longer
carry this package's imports either.

Spark puts its zipped copies of PySpark and py4j (``python/lib/pyspark.zip``,
``py4j-*-src.zip``) first on the workers' PYTHONPATH. Python compiles what it imports
from a zip every time (it writes no bytecode cache there), and each forked worker
imports ``pyspark.worker`` anew: measured here, the daemon's imports cost 0.65-0.85 s
of CPU from the zips against 0.2 s from the installed package, a worker's 0.75 against
0.43. Where this interpreter has the same release installed (``version.py`` equal), the
exec leaves the zip off PYTHONPATH, so the daemon and every worker import the installed,
compiled copy: the same code.
"""

from __future__ import annotations

import os
import sys
import zipfile
from importlib.machinery import PathFinder
from pathlib import Path

_MODULE = "jupyter_spark_sessions.backends.spark_daemon"


def zipped_package(entry: str) -> str | None:
    """The package of Spark's zip at ``entry`` (``.../pyspark.zip``,
    ``.../py4j-0.10.9.9-src.zip``), None for any other entry."""
    name = os.path.basename(entry)
    if name == "pyspark.zip":
        return "pyspark"
    if name.startswith("py4j-") and name.endswith("-src.zip"):
        return "py4j"
    return None


def _zip_version(entry: str, package: str) -> bytes | None:
    try:
        with zipfile.ZipFile(entry) as archive:
            return archive.read(f"{package}/version.py")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def _installed_version(package: str, search_path: list[str]) -> bytes | None:
    spec = PathFinder.find_spec(package, search_path)
    if spec is None or not spec.origin:
        return None
    try:
        return (Path(spec.origin).parent / "version.py").read_bytes()
    except OSError:
        return None


def without_redundant_zips(pythonpath: str, search_path: list[str]) -> str:
    """``pythonpath`` without Spark's zips whose package, found on ``search_path`` (the
    interpreter's path with no zip of Spark's), is the same release; everything else in
    its order."""
    entries = pythonpath.split(os.pathsep) if pythonpath else []
    outside = [p for p in search_path if zipped_package(p) is None]
    kept = []
    for entry in entries:
        package = zipped_package(entry)
        if package is not None:
            zipped = _zip_version(entry, package)
            if zipped is not None and zipped == _installed_version(package, outside):
                continue
        kept.append(entry)
    return os.pathsep.join(kept)


if __name__ == "__main__":
    os.setpgid(0, 0)
    if sys.executable:
        env = dict(os.environ)
        env["PYTHONPATH"] = without_redundant_zips(env.get("PYTHONPATH", ""), sys.path)
        os.execve(
            sys.executable,
            [sys.executable, "-m", "pyspark.daemon", *sys.argv[1:], _MODULE],
            env,
        )
    from pyspark import daemon  # no interpreter to exec: run it here

    daemon.manager()

"""The options of every JVM a test run starts (drivers and Connect servers through
spark-submit, the standalone cluster's daemons): what makes a JVM's start cheap. A
kernel-level suite on 2 cores is bound by CPU, and most of it goes to JVMs starting
(loading and verifying Spark's classes) and to their first jobs; behaviour is the same.
Benchmarks use none of this.

- ``-XX:TieredStopAtLevel=1``: the C1 compiler only. A test's JVM lives for seconds of
  small jobs, where C2's compiling is pure cost.
- ``-XX:+UseSerialGC``: a test's heap is small and short-lived; G1's concurrent threads
  and its bookkeeping cost a driver's start and first jobs about 5% more CPU here
  (5.5-5.9 CPU-s against 6.0-6.2).
- An application class-data archive (JDK 17's AppCDS): Spark's classes as a driver loads
  them, parsed and verified once (``-XX:ArchiveClassesAtExit`` on a short driver run,
  kept per PySpark, Java and virtualenv under build/) and mapped by every later JVM
  (``-XX:SharedArchiveFile``). A driver's start and first jobs took 8.7 s of CPU instead
  of 17.1 on this 2-core machine, its start 4.7 s instead of 9.0. It applies to a JVM
  whose class path starts with the archive's: drivers, and the local Spark Connect
  servers (the project's jar comes after Spark's jars: driver_jar.class_path_env; a
  server's start and first queries 5.3-6.2 CPU-s instead of 9.4-9.7). A JVM whose class
  path differs (an executor, the launcher) just loads its classes as usual. (Adding a
  Connect server's own classes to the workload saved about 0.5 CPU-s more per server:
  not worth a second private API here.)

    python tests/jvm_options.py   # make the archive for this interpreter's PySpark now
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

JIT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: What the archive is made from: a driver's start, SQL jobs, a Python UDF, Arrow and
#: pandas (what the tests' drivers do first), on the class path every driver has.
WORKLOAD = """
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, pandas_udf, udf
spark = (SparkSession.builder.master('local[2]').appName('class-data archive')
         .config('spark.ui.enabled', 'false').getOrCreate())
spark.range(0, 100, 1, 2).selectExpr('sum(id)').collect()
spark.createDataFrame([(1, 'a'), (2, 'b')], 'n long, s string').groupBy('s').count().collect()
spark.range(4).select(udf(lambda x: x + 1, 'long')('id')).collect()
spark.range(4).select(pandas_udf(lambda v: v + 1, 'long')(col('id'))).collect()
spark.createDataFrame(pd.DataFrame({'x': [1, 2]})).toPandas()
spark.sql('select 1 as x').write.mode('overwrite').parquet(spark.conf.get('jss.out'))
spark.sparkContext.parallelize(range(10), 2).map(lambda x: x * 2).sum()
spark.stop()
"""

#: Where the archives are kept: build/jvm-class-data in the project (git-ignored).
ARCHIVE_DIR = Path(__file__).resolve().parents[1] / "build" / "jvm-class-data"


def archive_path(python: str = sys.executable) -> Path:
    """The archive for ``python``'s PySpark and the Java on PATH (or JAVA_HOME): any
    change of either makes another file."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or "java"
    java = os.path.realpath(java)
    stamp = f"{java}:{os.stat(java).st_mtime_ns if os.path.exists(java) else 0}"
    prefix = os.path.realpath(sys.prefix if python == sys.executable else Path(python).parent)
    key = hashlib.sha256(f"{stamp}|{prefix}".encode()).hexdigest()[:16]
    import pyspark

    return ARCHIVE_DIR / f"spark-{pyspark.__version__}-{key}.jsa"


def ensure_archive() -> Path | None:
    """The archive for this interpreter, made first if missing (about 20 s, once); None
    when it could not be made (the run goes on without it, and says so)."""
    path = archive_path()
    if path.exists():
        return path
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel runs on one venv make it once
        if path.exists():
            return path
        with tempfile.TemporaryDirectory() as work:
            partial = Path(work) / "archive.jsa"
            env = dict(
                os.environ,
                SPARK_SUBMIT_OPTS=f"{JIT_OPTIONS} -XX:ArchiveClassesAtExit={partial}",
                PYSPARK_PYTHON=sys.executable,
            )
            script = WORKLOAD.replace(
                "spark.conf.get('jss.out')", repr(str(Path(work) / "out.parquet"))
            )
            done = subprocess.run(
                [sys.executable, "-c", script],
                env=env,
                cwd=work,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0 or not partial.exists():
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
                print(f"No JVM class-data archive (JVMs start without one):\n{tail}")
                return None
            shutil.move(partial, path)
    return path


def options_for(archive: Path | None) -> str:
    """The options for ``SPARK_SUBMIT_OPTS`` and ``SPARK_DAEMON_JAVA_OPTS``. ``-Xshare:auto``
    (the default) maps the archive where it fits and quietly loads classes as usual where
    not; ``-Xlog:cds=off`` keeps its notes out of the JVMs' output."""
    if archive is None:
        return JIT_OPTIONS
    return f"{JIT_OPTIONS} -XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off"


if __name__ == "__main__":
    made = ensure_archive()
    print(made or "no archive")
    sys.exit(0 if made else 1)

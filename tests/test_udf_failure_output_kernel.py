"""What a cell shows when a task fails with a Python exception (issue 39, item 2): the
Python error, and none of Spark's log of the failure (the executor's ``ERROR Executor:
Exception in task ...`` with its Scala stack, the scheduler's ``aborting job``), which
the JVM writes to its stderr, so into the running cell. Any other ERROR of the JVM, a
task that failed in the JVM included, still reaches the cell.

Through one real kernel run as a Jupyter server runs it (``Kernel(server_log=...)``:
what the JVM writes shows in the running cell; see tests/test_quiet_jvm_kernel.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_driver import CellResult, Kernel, start_with_profile

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

#: What the JVM's log of a task failure looks like in a cell.
FAILURE_LINES = ("ERROR Executor", "at org.apache", "ERROR TaskSetManager", "PythonRunner.scala")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("udf-failure")
    kernel = start_with_profile(
        tmp / "ipython",
        "c.SparkSessionsConfig.default_master = 'local[2]'\n"
        "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false', "
        "'spark.ui.showConsoleProgress': 'false'}\n"
        f"c.SparkSessionsConfig.session_root = {str(tmp / 'sessions')!r}\n",
        tmp,
        server_log=Path(tmp / "server.log"),
    )
    kernel.ok("%spark_session create a\n%spark_session use a")
    yield kernel
    kernel.shutdown()


def assert_no_failure_log(result: CellResult) -> None:
    output = result.stdout + result.stderr
    for line in FAILURE_LINES:
        assert line not in output, output


def test_a_failing_udf_shows_its_python_error_and_not_the_jvms_log_of_it(kernel: Kernel) -> None:
    failed = kernel.execute(
        "from pyspark.sql.functions import udf\n"
        "spark.range(4).select(udf(lambda x: 1 / 0)('id')).collect()"
    )
    assert failed.status == "error"
    assert failed.error_name == "PythonException", (failed.error_name, failed.error_value)
    assert "ZeroDivisionError: division by zero" in failed.error_value, failed.error_value
    assert_no_failure_log(failed)
    assert failed.stderr == "", failed.stderr
    # %tb shows the whole error again.
    shown = kernel.execute("%tb")
    text = "\n".join(shown.traceback) + shown.stdout + shown.stderr
    assert "ZeroDivisionError" in text and "PythonException" in text, text
    # An RDD's Python function: the same log, the same silence (the cell's error says it).
    rdd = kernel.execute("spark.sparkContext.parallelize([1, 2], 2).map(lambda x: x / 0).collect()")
    assert rdd.status == "error" and "ZeroDivisionError" in rdd.error_value, rdd.error_value
    assert_no_failure_log(rdd)
    # The kernel goes on as before.
    assert kernel.ok("spark.range(3).count()").result_text == "3"


def test_any_other_error_of_the_jvm_still_reaches_the_cell(kernel: Kernel) -> None:
    # A task that failed in the JVM (ANSI division by zero, evaluated in the task).
    jvm = kernel.execute("spark.range(2).selectExpr('1 div (id - id)').collect()")
    assert jvm.status == "error" and "DIVIDE_BY_ZERO" in jvm.error_value, jvm.error_value
    assert "ERROR Executor: Exception in task" in jvm.stderr, jvm.stderr
    assert "org.apache.spark.SparkArithmeticException" in jvm.stderr, jvm.stderr
    assert "aborting job" in jvm.stderr, jvm.stderr
    # A log record of the JVM's own, right after a Python task failure.
    probe = kernel.execute(
        "import time\n"
        "from pyspark.sql.functions import udf\n"
        "try:\n"
        "    spark.range(4).select(udf(lambda x: 1 / 0)('id')).collect()\n"
        "except Exception:\n"
        "    pass\n"
        "jvm = spark.sparkContext._jvm\n"
        "jvm.org.apache.logging.log4j.LogManager.getLogger('org.apache.spark.Probe')"
        ".error('a real error')\n"
        "time.sleep(1)"
    )
    assert probe.status == "ok", probe.error_value
    assert " ERROR Probe: a real error\n" in probe.stderr, probe.stderr
    assert_no_failure_log(probe)

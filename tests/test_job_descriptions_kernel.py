"""Group and job descriptions through a real kernel on a real JVM: a group reads as the
code of its cell that ran its first job, each job as the line of the user's code
that started it (``In [N] line L``), also for a ``pyspark.InheritableThread`` whose job
starts after its cell ended."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from test_job_board_kernel import wait_for_group

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]


@pytest.fixture(scope="module")
def session_a(kernel: Kernel) -> Kernel:
    kernel.ok("%spark_session create a")
    return kernel


def ended(count: int) -> Any:
    return lambda g: g["id"] == f"a:{count}" and g["state"] == "succeeded" and g["jobs"]


def test_a_group_reads_as_its_code_line_and_its_jobs_as_the_line_that_ran_them(
    session_a: Kernel,
) -> None:
    cell = session_a.ok(
        "%spark_session use a\n# comment\ndef f(x):\n    return x\nspark.range(10).count()"
    )
    count = cell.execution_count
    assert count is not None
    group = wait_for_group(session_a, ended(count))
    assert group["description"] == "spark.range(10).count()"
    assert {j["name"] for j in group["jobs"]} == {f"count at In [{count}] line 5"}, group["jobs"]


def test_collect_show_and_writes_are_named_after_their_lines(session_a: Kernel) -> None:
    cell = session_a.ok(
        "import os\n"
        "rows = spark.range(4).collect()\n"
        "spark.range(3).show()\n"
        "spark.range(5).write.format('noop').mode('overwrite').save()\n"
        "spark.sparkContext.parallelize(range(4), 2).sum()\n"
    )
    count = cell.execution_count
    group = wait_for_group(session_a, lambda g: ended(count)(g) and len(g["jobs"]) >= 4)
    assert group["description"] == "rows = spark.range(4).collect()"
    names = {j["name"] for j in group["jobs"]}
    assert names == {
        f"collect at In [{count}] line 2",
        f"show at In [{count}] line 3",
        f"save at In [{count}] line 4",
        f"sum at In [{count}] line 5",
    }, names


def test_a_thread_job_after_its_cell_ended_is_described_by_that_cell(session_a: Kernel) -> None:
    cell = session_a.ok(
        "import time\n"
        "from pyspark import InheritableThread\n"
        "def work():\n"
        "    time.sleep(1.5)  # the job starts after this cell ended\n"
        "    spark.range(7).collect()\n"
        "worker = InheritableThread(target=work)\n"
        "worker.start()\n"
    )
    ended_at = time.time()
    count = cell.execution_count
    assert count is not None
    group = wait_for_group(session_a, ended(count))
    assert group["description"] == "spark.range(7).collect()"
    [job] = group["jobs"]
    # PySpark alone names it `copy_local_properties at .../threading.py:982`.
    assert job["name"] == f"collect at In [{count}] line 5", job
    assert job["submitted_at"] > ended_at, "the job must start after its cell ended"
    session_a.ok("worker.join()")


def test_jobs_in_a_cell_magic_body_name_the_cell_and_its_line(session_a: Kernel) -> None:
    cell = session_a.ok("%%spark_session a\nimport os\nspark.range(6).collect()\n")
    count = cell.execution_count
    group = wait_for_group(session_a, ended(count))
    assert group["description"] == "spark.range(6).collect()"
    assert {j["name"] for j in group["jobs"]} == {f"collect at In [{count}] line 3"}
    failed = session_a.execute("%%spark_session a\nx = 1\nraise ValueError('line 3')\n")
    assert failed.error_name == "ValueError"
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(failed.traceback))  # no colours
    assert f"In[{failed.execution_count}], line 3" in text, text
    assert "----> 3 raise ValueError('line 3')" in text, text


SPARK_UI_DESCRIPTIONS = """
_store = spark.sparkContext._jsc.sc().statusStore()
_ui = {}
for _id in range(_first, spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs()):
    _d = _store.job(_id).description()
    _ui[_id] = _d.get() if _d.isDefined() else None
"""


def test_spark_ui_lists_a_cells_jobs_by_the_boards_names_and_keeps_the_users_own(
    session_a: Kernel,
) -> None:
    """Spark's UI lists jobs by their description (then their call site): a cell's jobs
    read as its group (``a:N · session a · In [N]``) beside the line that ran them; a
    description the user set with ``setJobDescription`` stays theirs."""
    session_a.ok("%spark_session use a")
    session_a.ok("_first = spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs()")
    cell = session_a.ok("spark.range(10).count()\nspark.range(4).collect()")
    count = cell.execution_count
    # Set in one cell, the user's description holds for the next ones, as in PySpark.
    session_a.ok("spark.sparkContext.setJobDescription('my nightly load')")
    session_a.ok("spark.range(3).collect()")
    session_a.ok("spark.sparkContext.setJobDescription(None)")
    session_a.ok(SPARK_UI_DESCRIPTIONS)
    descriptions = list(session_a.value("_ui").values())
    ours = f"a:{count} · session a · In [{count}]"
    assert descriptions[:-1] == [ours] * (len(descriptions) - 1), descriptions
    assert descriptions[-1] == "my nightly load", descriptions

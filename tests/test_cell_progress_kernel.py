"""The in-cell progress view through real kernels and real Spark: it appears under a
cell running jobs and advances, ends as one summary line, shows nothing for cells
without jobs or when turned off, and a notebook run headless by nbconvert keeps each
Spark cell's static summary only."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import nbformat
import pytest
from conftest import SPARK_TEST_CONF, SharedKernel
from test_job_board_kernel import request, wait_for_group
from test_protocol_schema import errors

from jupyter_spark_sessions.cells.progress import INTERRUPT_HINT, MIME_TYPE
from kernel_driver import KERNEL_NAME, CellResult, Kernel, _write_kernelspec

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

# About 5 s on local[2]: 16 tasks of 0.6 s, so the view sees tasks move.
SLOW_JOB = """from pyspark.sql.functions import udf
@udf("long")
def _slow(x):
    import time
    time.sleep(0.6)
    return x
len(spark.range(0, 16, 1, 16).select(_slow("id")).collect())"""

# One task sleeping for minutes: the cell stays busy until cancelled.
LONG_JOB = """from pyspark.sql.functions import udf
@udf("long")
def _sleepy(x):
    import time
    time.sleep(120)
    return x
spark.range(0, 2, 1, 1).select(_sleepy("id")).collect()"""

# Six jobs in a loop, each of two 0.5 s tasks: a long cell whose jobs arrive one by one.
LOOP_JOBS = """from pyspark.sql.functions import udf
@udf("long")
def _step(x):
    import time
    time.sleep(0.5)
    return x
for _ in range(6):
    spark.range(0, 2, 1, 2).select(_step("id")).collect()"""

SUMMARY = re.compile(r"^a:(\d+) (\w+) · (\d+) jobs? · ([\d,]+)/([\d,]+) tasks(?: .*)? · [\d.]+ s$")


@pytest.fixture(scope="module")
def kernel(shared_kernel: SharedKernel) -> Kernel:
    """The run's shared kernel, with session a bound."""
    k = shared_kernel.reset()
    k.ok("%spark_session create a\n%spark_session use a")
    return k


def views(result: CellResult) -> list[tuple[str, dict[str, Any]]]:
    """The cell's in-cell view messages: (msg_type, bundle), in order."""
    return [(kind, c["data"]) for kind, c in result.displays if MIME_TYPE in c["data"]]


def test_a_cell_running_jobs_shows_progress_that_advances_then_one_summary(kernel: Kernel) -> None:
    result = kernel.ok(SLOW_JOB)
    shown = views(result)
    kinds = [kind for kind, _ in shown]
    assert kinds[0] == "display_data" and set(kinds[1:]) == {"update_display_data"}, kinds
    ids = {c["transient"]["display_id"] for _, c in result.displays}
    assert len(ids) == 1  # one output, updated in place
    done = [sum(g["tasks"]["done"] for g in b[MIME_TYPE]["groups"]) for _, b in shown]
    assert len(set(done)) >= 3, done  # it moved while the cell ran
    assert done == sorted(done)
    running = [b for _, b in shown if not b[MIME_TYPE]["final"]]
    assert any(INTERRUPT_HINT in b["text/plain"] for b in running)
    assert any("running" in b["text/plain"].splitlines()[0] for b in running)
    last = shown[-1][1]
    assert last[MIME_TYPE]["final"] is True
    assert errors(last[MIME_TYPE], "CellProgress") == []
    # The summary line, then what happened inside (its stages: test_inside_a_job_kernel).
    match = SUMMARY.match(last["text/plain"].splitlines()[0])
    assert match, last["text/plain"]
    assert int(match.group(1)) == result.execution_count
    assert match.group(2) == "succeeded" and match.group(4) == match.group(5) != "0"
    assert INTERRUPT_HINT not in last["text/plain"] and "<progress" not in last["text/html"]


def test_a_cell_running_jobs_in_a_loop_shows_jobs_done_and_the_running_jobs_own_bar(
    kernel: Kernel,
) -> None:
    # Issue 28 (9): the bar's total grew as jobs arrived ("10/12 tasks"), so it sat near
    # its end the whole time. Now: the jobs done, and the running job's own tasks.
    result = kernel.ok(LOOP_JOBS)
    running = [b for _, b in views(result) if not b[MIME_TYPE]["final"]]
    entries = [b[MIME_TYPE]["groups"][0] for b in running]
    with_job = [e for e in entries if e["job"]]
    assert with_job, entries
    assert {e["job"]["tasks"]["total"] for e in with_job} == {2}  # one job's, not the sum
    assert max(e["jobs_done"] for e in entries) >= 3, entries
    shown = [b for b in running if b[MIME_TYPE]["groups"][0]["jobs_done"] >= 2]
    assert shown and all(" jobs done · " in b["text/plain"] for b in shown)
    assert all("/2 tasks" in b["text/plain"] for b in shown if b[MIME_TYPE]["groups"][0]["job"])
    assert all(
        '<progress value="' in b["text/html"] and 'max="2"' in b["text/html"]
        for b in shown
        if b[MIME_TYPE]["groups"][0]["job"]
    )
    last = views(result)[-1][1]
    assert last["text/plain"].startswith(f"a:{result.execution_count} succeeded · 6 jobs · 12/12")


def test_cells_without_jobs_and_cells_with_the_view_off_show_nothing(kernel: Kernel) -> None:
    assert views(kernel.ok("x = 1")) == []
    assert views(kernel.ok("import time\ntime.sleep(0.5)")) == []
    switched = kernel.ok("%spark_session progress off")
    assert switched.stdout == "In-cell progress is off (from the next cell).\n"
    try:
        assert views(kernel.ok(SLOW_JOB)) == []
    finally:
        kernel.ok("%spark_session progress on")
    assert views(kernel.ok(SLOW_JOB))


def test_a_cancel_from_the_view_ends_the_cell_and_its_summary_says_cancelled(
    kernel: Kernel,
) -> None:
    busy = kernel.client.execute(LONG_JOB)
    group = wait_for_group(
        kernel, lambda g: g["session"] == "a" and g["state"] == "running" and g["tasks"]["active"]
    )
    reply, _ = request(
        kernel, {"version": 1, "action": "cancel", "groups": [group["id"]], "source": "cell"}
    )
    assert reply["cancelling"] == [group["id"]], reply
    result = kernel.collect(busy, timeout=60)
    assert result.error_value.endswith("were cancelled from the cell's progress view."), (
        result.error_value
    )
    last = views(result)[-1][1]
    assert last[MIME_TYPE]["final"] is True
    assert last["text/plain"].startswith(f"{group['id']} cancelled · 1 job"), last["text/plain"]
    # Spark ended the job; its task's Python worker may still be stopping: the summary
    # claims nothing running (it said "0/1 tasks (1 running)"), and the board names the
    # job as the group, cancelled (not Spark's FAILED).
    assert "running" not in last["text/plain"], last["text/plain"]
    ended = wait_for_group(kernel, lambda g: g["id"] == group["id"])
    assert [j["state"] for j in ended["jobs"]] == ["cancelled"], ended["jobs"]


def test_a_notebook_run_headless_by_nbconvert_keeps_each_spark_cells_static_summary(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    profile = tmp_path_factory.mktemp("ipython")
    (profile / "profile_default").mkdir()
    (profile / "profile_default" / "ipython_config.py").write_text(SPARK_TEST_CONF)
    specs = tmp_path_factory.mktemp("kernelspecs")
    _write_kernelspec(specs)
    cells = [
        "%load_ext jupyter_spark_sessions\n%spark_session create a\n%spark_session use a",
        SLOW_JOB,
        "spark.range(0, 4000, 1, 8).selectExpr('id % 7 AS k').groupBy('k').count().collect()",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    folder = tmp_path_factory.mktemp("notebook")
    nbformat.write(notebook, folder / "run.ipynb")
    env = dict(
        os.environ,
        IPYTHONDIR=str(profile),
        JUPYTER_PATH=str(specs),  # where nbconvert finds the kernelspec
        PYSPARK_PYTHON=sys.executable,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            f"--ExecutePreprocessor.kernel_name={KERNEL_NAME}",
            "--ExecutePreprocessor.timeout=300",
            "--output",
            "executed",
            str(folder / "run.ipynb"),
        ],
        env=env,
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=600,
    )
    executed = folder / "executed.ipynb"
    saved = nbformat.read(executed, as_version=4)
    for cell in saved.cells[1:]:
        ours = [o for o in cell.outputs if MIME_TYPE in o.get("data", {})]
        assert len(ours) == 1, cell.outputs  # one output, not one per update
        (view,) = ours
        assert view["output_type"] == "display_data", view
        summary, *inside = view["data"]["text/plain"].splitlines()
        assert SUMMARY.match(summary), view["data"]["text/plain"]
        assert inside and inside[0].startswith("  stage "), inside  # the static picture
        assert "<svg" in view["data"]["text/html"], "the slot chart, as inline SVG"
        assert view["data"][MIME_TYPE]["final"] is True
        # Nothing else of the live view: the cell's own result beside it, and no line
        # of a running view.
        assert [o["output_type"] for o in cell.outputs if o is not view] == ["execute_result"]
        assert "running" not in view["data"]["text/plain"], view["data"]["text/plain"]
    text = executed.read_text()
    assert text.count("update_display_data") == 0
    assert text.count(INTERRUPT_HINT) == 0

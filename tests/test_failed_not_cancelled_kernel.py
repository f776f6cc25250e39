"""A job that failed reads "failed" on every view, with the first line of its cause;
only a cancel someone asked for reads "cancelled". Through a real kernel, on a classic
session and on a Spark Connect session (the local server ``--remote local`` starts).

Spark reports both a failed and a cancelled job as FAILED, and when one task of a job
fails while another still runs, Spark kills the running one ("Stage cancelled: <the
failure>"): the board once read that kill as a cancel (issue 47: `a:4 cancelled 1 0/2
(1 failed, 1 killed)` for a UDF that raised). Each failing cell below has one task that
fails and one still running, so Spark kills a task of every one of them.

The views: ``%spark_session jobs``, the panel's widget (the state a frontend mirrors),
the board the sidebar reads (the control channel's ``list``) and the cell's summary."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import SharedKernel
from test_job_board_kernel import request, wait_for_group

from jupyter_spark_sessions.cells.progress import MIME_TYPE
from kernel_driver import CellResult, Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

CLASSIC, CONNECT = "fa", "fc"

# Partition 0 fails at once; partition 1 sleeps meanwhile, so Spark kills it.
UDFS = """
from pyspark.sql.functions import udf as classic_udf
from pyspark.sql.connect.functions import udf as connect_udf

def _fails_beside_a_slow_task(x):
    import time
    if x == 0:
        return 1 // x
    time.sleep(4)
    return x

def _sleeps(x):
    import time
    time.sleep(60)
    return x

_udfs = {
    'fa': (classic_udf(_fails_beside_a_slow_task, 'long'), classic_udf(_sleeps, 'long')),
    'fc': (connect_udf(_fails_beside_a_slow_task, 'long'), connect_udf(_sleeps, 'long')),
}
"""

# (cell body run in the session, the cause's first line the views show)
FAILING = {
    "udf": (
        "spark.range(0, 2, 1, 2).select(_udfs[{name!r}][0]('id')).collect()",
        "ZeroDivisionError: integer division or modulo by zero",
    ),
    # ANSI (on by default in Spark 4): the multiplication overflows in both tasks.
    "ansi": (
        "spark.range(0, 2, 1, 2).selectExpr('(id + 9223372036854775806) * 2').collect()",
        "[ARITHMETIC_OVERFLOW]",
    ),
    # A task that fails in the JVM (no Python involved).
    "jvm": (
        "spark.range(0, 2, 1, 2).selectExpr(\"raise_error(concat('bad row ', id))\").collect()",
        "[USER_RAISED_EXCEPTION] bad row",
    ),
}
CANCELLED_CELL = "spark.range(0, 2, 1, 2).select(_udfs[{name!r}][1]('id')).collect()"


@pytest.fixture(scope="module")
def kernel(shared_kernel: SharedKernel) -> Kernel:
    k = shared_kernel.reset()
    k.ok(
        f"%spark_session create {CLASSIC}\n%spark_session create {CONNECT} --remote local\n"
        "%spark_session panel"
    )
    k.ok(UDFS)
    return k


def summary(result: CellResult) -> str:
    """The cell's last in-cell view: its summary line once the cell ended."""
    bundles = [c["data"] for _, c in result.displays if MIME_TYPE in c["data"]]
    assert bundles, result.displays
    assert bundles[-1][MIME_TYPE]["final"] is True
    return str(bundles[-1]["text/plain"])


def panel_label(kernel: Kernel, group_id: str) -> str:
    expression = (
        "get_ipython().magics_manager.registry['SparkSessionMagics']._panel"
        f"._group_rows[{group_id!r}].label.value"
    )
    return str(kernel.value(expression))


def ended_group(kernel: Kernel, group_id: str) -> dict[str, Any]:
    return wait_for_group(
        kernel, lambda g: g["id"] == group_id and g["state"] not in ("running", "cancelling")
    )


def assert_every_view_says(kernel: Kernel, name: str, group_id: str, state: str) -> None:
    group = ended_group(kernel, group_id)
    assert group["state"] == state, group
    assert all(j["state"] == state for j in group["jobs"] if j["state"] != "succeeded"), group
    table = kernel.ok(f"%spark_session jobs {name}").stdout
    row = next(line for line in table.splitlines() if line.startswith(group_id + " "))
    assert row.split()[1] == state, table
    deadline = time.monotonic() + 10
    while f"<code>{group_id}</code> <b>{state}</b>" not in panel_label(kernel, group_id):
        assert time.monotonic() < deadline, panel_label(kernel, group_id)
        time.sleep(0.2)


@pytest.mark.parametrize("name", [CLASSIC, CONNECT])
@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_job_that_failed_reads_failed_with_its_cause_on_every_view(
    kernel: Kernel, name: str, case: str
) -> None:
    code, cause = FAILING[case]
    # A cell shorter than a quarter second keeps no summary (cells/progress.py): with a
    # warm JVM the ANSI and raise_error jobs fail sooner than that.
    result = kernel.execute(
        f"%%spark_session {name}\n__import__('time').sleep(0.4)\n{code.format(name=name)}"
    )
    assert result.status == "error", result.stdout
    group_id = f"{name}:{result.execution_count}"
    line = summary(result)
    assert line.startswith(f"{group_id} failed · "), line
    assert cause in line, line
    assert_every_view_says(kernel, name, group_id, "failed")
    group = ended_group(kernel, group_id)
    assert any(cause in j["error"] for j in group["jobs"]), group["jobs"]
    table = kernel.ok(f"%spark_session jobs {name}").stdout
    assert f"{group_id} failed: " in table and cause in table, table
    panel_jobs = (
        "get_ipython().magics_manager.registry['SparkSessionMagics']._panel"
        f"._group_rows[{group_id!r}].jobs.value"
    )
    assert cause in str(kernel.value(panel_jobs)), kernel.value(panel_jobs)


@pytest.mark.parametrize("name", [CLASSIC, CONNECT])
def test_a_cancelled_group_of_the_same_shape_reads_cancelled(kernel: Kernel, name: str) -> None:
    busy = kernel.client.execute(
        f"%%spark_session {name}\n{CANCELLED_CELL.format(name=name)}", store_history=True
    )
    group = wait_for_group(
        kernel,
        lambda g: g["session"] == name and g["state"] == "running" and g["cell_running"],
    )
    reply, _ = request(kernel, {"version": 1, "action": "cancel", "groups": [group["id"]]})
    assert reply["cancelling"] == [group["id"]], reply
    result = kernel.collect(busy, timeout=60)
    assert result.status == "error"
    assert summary(result).startswith(f"{group['id']} cancelled · "), summary(result)
    assert_every_view_says(kernel, name, group["id"], "cancelled")

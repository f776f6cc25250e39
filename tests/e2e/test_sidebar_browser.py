"""The Spark Sessions sidebar in a real JupyterLab, in a real Chromium: it follows the
notebook's kernel, lists sessions and job groups, and its Cancel reaches the kernel
while the cell that started the job is still running; a notebook whose kernel has not
loaded the extension is shown as such at once."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import SPARK_UI_KERNEL_CONFIG
from .lab import LabServer, save_screenshot, set_theme
from .notebook import (
    A_LONG_CELL,
    B_BACKGROUND_CELL,
    B_RESULT_CELL,
    SETUP_CELL,
    assert_inside,
    cell_output,
    cut_elements,
    kernel_status_text,
    open_notebook,
    open_sidebar,
    overlapping,
    rerun_after_run_all_stopped,
    run_all,
    run_cell,
    wait_for_sessions,
)
from .waiting import running

pytestmark = [pytest.mark.browser, pytest.mark.spark]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """This module's JupyterLab, its kernels' Spark UI on: the sidebar links sessions
    and jobs to it (the last test opens every link)."""
    root = tmp_path_factory.mktemp("lab")
    with running(LabServer(root, kernel_config=SPARK_UI_KERNEL_CONFIG)) as server:
        yield server


# Run only after the file was added from the file browser (the last test).
READ_UI_FILE_CELL = """%%spark_session a
from pyspark.sql.functions import udf
@udf('string')
def _read_ui(p):
    return open(p).read()
rows = spark.createDataFrame([('ui_lookup.csv',)], 'p string').select(_read_ui('p'))
print('ui file:', rows.first()[0])"""


# Session a, after the restart: a long cell, jobs in a loop, then one of ~12 s.
LOOP_CELL = """%%spark_session a
from pyspark.sql.functions import udf
@udf("long")
def _pause(x):
    import time
    time.sleep(12)
    return x
for _ in range(6):
    spark.range(1).count()
spark.range(0, 2, 1, 2).select(_pause("id")).collect()"""

# The driver JVM dies (before the kernel restart).
KILL_DRIVER_CELL = """import os, signal, pyspark
os.kill(pyspark.SparkContext._gateway.proc.pid, signal.SIGKILL)"""


def files_of(sidebar: Any, session: str) -> Any:
    """The file items the sidebar lists under ``session``."""
    # `has` is matched inside each block: a selector of its own, not one under `sidebar`.
    row = sidebar.page.locator(f"[data-testid='jss-session'][data-session='{session}']")
    block = sidebar.locator(".jp-SparkSessions-sessionBlock", has=row)
    return block.locator("[data-testid='jss-session-file']")


# A file per session (the sidebar lists them, and the screenshots). Not the same name:
# b's background job is an RDD job in a thread, which runs without session state and
# would get every session's files in one folder (docs/files.md, "Limits").
FILE_OF = {"a": "lookup.csv", "b": "rates.csv"}
FILES_CELL = "\n".join(f"%spark_session add_file {s} data_{s}/{f}" for s, f in FILE_OF.items())

# A session of a long name, with long group ids (issue 39, 4: at JupyterLab's default
# width the sidebar cut them): a job in a plain thread (its background group), and one
# in its group 1. `spark` stays unbound, as the later cells expect.
LONG_NAME = "marketing_attribution"
LONG_NAME_CELL = f"""%spark_session create {LONG_NAME}
import threading
from jupyter_spark_sessions.app import default_registry
_long = default_registry().session("{LONG_NAME}")
_plain = threading.Thread(target=lambda: _long.range(3).count())
_plain.start()
_plain.join()
with default_registry().running_in("{LONG_NAME}", 1) as _s:
    _s.range(3).count()"""

# What must show whole in the sidebar: names, states, ids, and the lines they are on.
WHOLE = ", ".join(
    f".jp-SparkSessions-{part}"
    for part in (
        "sessionName",
        "session",
        "sessionInfo > *",
        "button",
        "group",
        "groupTop",
        "groupId",
        "badge",
        "job",
        "jobTasks",
        "stage",
    )
)


def check_layout(sidebar: Any) -> None:
    """Nothing cut, and no button over text (issue 39, 4)."""
    assert cut_elements(sidebar, WHOLE) == []
    for row in sidebar.locator("[data-testid='jss-session']").all():
        button = row.locator("[data-testid='jss-cancel-session']")
        for text in (
            row.locator(".jp-SparkSessions-sessionName"),
            row.locator(".jp-SparkSessions-sessionInfo"),
        ):
            assert not overlapping(button, text), row.inner_text()
        for share in row.locator("[data-testid='jss-session-share']").all():
            assert not overlapping(button, share), row.inner_text()
    for group in sidebar.locator("[data-testid='jss-group']").all():
        button = group.locator("[data-testid='jss-cancel-group']")
        for part in (".jp-SparkSessions-groupId", ".jp-SparkSessions-badge"):
            assert not overlapping(button, group.locator(part)), group.inner_text()
    for row in sidebar.locator("[data-testid='jss-shared-session']").all():
        button = row.locator("[data-testid='jss-shared-cancel']")
        for part in (".jp-SparkSessions-sessionName", ".jp-SparkSessions-sharedWork"):
            assert not overlapping(button, row.locator(part)), row.inner_text()


def test_sidebar_lists_sessions_and_cancels_a_busy_cells_group(lab: LabServer, page: Any) -> None:
    sidebar = open_sidebar(page)
    for name, file in FILE_OF.items():
        lab.api("PUT", f"/api/contents/data_{name}", {"type": "directory"})
        lab.api(
            "PUT",
            f"/api/contents/data_{name}/{file}",
            {"type": "file", "format": "text", "content": f"key,value\n1,{name}\n"},
        )
    setup = f"{SETUP_CELL}\n{FILES_CELL}\n{LONG_NAME_CELL}"
    cells = [
        setup,
        B_BACKGROUND_CELL,
        A_LONG_CELL,
        B_RESULT_CELL,
        READ_UI_FILE_CELL,
        LOOP_CELL,
        KILL_DRIVER_CELL,
    ]
    open_notebook(page, lab, "sidebar.ipynb", cells)
    sidebar = open_sidebar(page)
    empty = sidebar.locator("[data-testid='jss-empty']")
    empty.filter(has_text="%load_ext jupyter_spark_sessions").wait_for(timeout=30_000)
    assert empty.locator("code").inner_text() == "%load_ext jupyter_spark_sessions"
    assert sidebar.locator("[data-testid='jss-notebook']").inner_text() == "sidebar.ipynb"
    assert sidebar.locator("[data-testid='jss-kernel']").inner_text() == "Python 3 (ipykernel)"

    run_all(page)  # the last cell waits for b: it runs after the cancel, queued
    wait_for_sessions(sidebar, "a", "b")
    group_a = sidebar.locator("[data-testid='jss-group'][data-state='running']").filter(
        has_text="a:3"
    )
    group_a.wait_for(timeout=120_000)
    group_b = sidebar.locator("[data-testid='jss-group'][data-group='b:2']")
    group_b.wait_for(timeout=30_000)
    assert group_b.get_attribute("data-state") == "running"
    for name, file in FILE_OF.items():
        files_of(sidebar, name).filter(has_text=file).wait_for(timeout=30_000)
    # The job and its stage show before their task runs: wait for the running task.
    group_a.locator("[data-testid='jss-job-progress'][data-total='1']").first.wait_for(
        timeout=60_000
    )
    group_a.locator("[data-testid='jss-stage-progress'][data-active='1']").first.wait_for(
        timeout=60_000
    )
    for name in ("a", "b"):
        timeline = sidebar.locator(f"[data-testid='jss-timeline'][data-session='{name}']")
        assert timeline.locator("[data-testid='jss-timeline-bar']").count() >= 1
    # Each session's running tasks against the context's 2 slots, and its share: a's
    # group runs its one task.
    share_a = sidebar.locator(
        "[data-testid='jss-session'][data-session='a'] [data-testid='jss-session-share']"
    )
    share_a.filter(has_text="1 of 2 slots \u00b7 weight 1").wait_for(timeout=10_000)
    # Every Cancel whole at the sidebar's default width (the first one was clipped).
    for row in (group_a, group_b):
        assert_inside(row.locator("[data-testid='jss-cancel-group']"), row)
    assert_inside(sidebar.locator("button"), sidebar)
    # The kernel's status follows the running cell, not the sidebar's requests: its
    # probe, subscription (its subshell) after cell 1 loaded the extension were
    # answered while cell 3 ran, and each answer's idle read "Idle" (issue 39, 8).
    assert kernel_status_text(page) == "Python 3 (ipykernel) | Busy"

    # At JupyterLab's default width (250 px), names, ids and states whole, no button
    # over text (issue 39, 4): a's and b's groups running, the long name's ended.
    box = sidebar.bounding_box()
    assert box is not None and box["width"] <= 260, box
    # Its background group, and the group of the cell (its number is the kernel's).
    long_groups = sidebar.locator(
        f"[data-testid='jss-group'][data-group^='{LONG_NAME}:'][data-state='succeeded']"
    )
    long_groups.and_(page.locator(f"[data-group='{LONG_NAME}:background']")).wait_for(
        timeout=30_000
    )
    long_groups.nth(1).wait_for(timeout=30_000)
    check_layout(sidebar)

    save_screenshot(page, "sidebar-light.png")
    save_screenshot(sidebar, "sidebar-250-light.png")
    set_theme(page, "JupyterLab Dark")
    check_layout(sidebar)
    save_screenshot(page, "sidebar-dark.png")
    save_screenshot(sidebar, "sidebar-250-dark.png")
    set_theme(page, "JupyterLab Light")

    group_a.locator("[data-testid='jss-cancel-group']").click()  # the cell is busy
    cell_output(page, 2).locator("text=JobsCancelled: The Spark jobs of a:3 (job").first.wait_for(
        timeout=30_000
    )
    assert "were cancelled from the sidebar." in cell_output(page, 2).inner_text()
    # The in-cell view's summary comes as the cell ends, just after its error.
    summary = cell_output(page, 2).locator("[data-testid='spark-cell-summary']")
    summary.wait_for(timeout=30_000)
    assert summary.inner_text().startswith("cancelled · 1 job · "), summary.inner_text()
    # What the user reads in place of Spark's stack: the cell's `use` line, the in-cell
    # view's summary (its group id, then the line), then one line.
    # (What happened inside the group, "1 stage" and its rows, is not counted.)
    inside = cell_output(page, 2).locator("[data-testid='spark-cell-inside']")
    inside_lines = {
        line for i in range(inside.count()) for line in inside.nth(i).inner_text().splitlines()
    }
    shown = [
        line
        for line in cell_output(page, 2).inner_text().splitlines()
        if line.strip() and line not in inside_lines
    ]
    assert shown[0] == "`spark` is now session 'a'." and len(shown) <= 4, shown
    assert shown[-1].startswith("JobsCancelled: The Spark jobs of a:3 (job "), shown
    assert not any("Traceback" in line or "Py4J" in line for line in shown), shown
    save_screenshot(cell_output(page, 2), "cancelled-cell.png")
    sidebar.locator("[data-testid='jss-group'][data-group='a:3'][data-state='cancelled']").wait_for(
        timeout=30_000
    )
    rerun_after_run_all_stopped(page, 3)
    cell_output(page, 3).locator("text=b result: {'sum': 45}").wait_for(timeout=120_000)
    sidebar.locator("[data-testid='jss-group'][data-group='b:2'][data-state='succeeded']").wait_for(
        timeout=30_000
    )


def test_a_dead_driver_then_a_kernel_restart_then_a_long_cell(lab: LabServer, page: Any) -> None:
    sidebar = open_sidebar(page)
    # The driver JVM dies: the kernel still answers, its sessions do not (issue 28, 6:
    # the header said "connected").
    status = sidebar.locator("[data-testid='jss-status']")
    assert status.inner_text() == "connected"
    run_cell(page, 6)
    status.and_(page.locator("[data-status='disconnected']")).wait_for(timeout=30_000)
    assert status.inner_text() == "sessions disconnected"
    assert_inside(status, sidebar)  # whole: it wraps under the title
    assert "the Spark driver of this kernel is gone" in (status.get_attribute("title") or "")
    # The cell that killed it ends quietly: the tags it cannot remove died with the JVM.
    assert "could not remove" not in cell_output(page, 6).inner_text()
    save_screenshot(page, "sidebar-driver-lost.png")

    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel…").first.click()
    page.locator(".jp-Dialog button", has_text="Restart").click()
    sidebar.locator("[data-testid='jss-empty']").wait_for(timeout=60_000)
    assert sidebar.locator("[data-testid='jss-session']").count() == 0
    run_cell(page, 0)
    wait_for_sessions(sidebar, "a", "b")
    status.and_(page.locator("[data-status='ready']")).wait_for(timeout=10_000)

    # A long cell (issue 28, 9): the sidebar lists its running job and counts the others
    # (it listed one row per job); the in-cell view shows the jobs done and the running
    # job's own bar (its total grew with each job).
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=60_000)
    run_cell(page, 5)
    group = sidebar.locator("[data-testid='jss-group'][data-state='running']").filter(
        has_text="a:2"
    )
    # The last job (the collect), once the loop's jobs are all done.
    group.locator(".jp-SparkSessions-job[title^='collect at']").wait_for(timeout=60_000)
    toggle = group.locator("[data-testid='jss-jobs-toggle']")
    toggle.filter(has_text=re.compile(r"^\u25b8 \d+ earlier jobs: \d+ succeeded$")).wait_for(
        timeout=10_000
    )
    earlier = int(re.findall(r"\d+", toggle.inner_text())[0])
    assert earlier >= 6 and group.locator("[data-testid='jss-job']").count() == 1
    view = cell_output(page, 5).locator("[data-testid='spark-cell-progress']")
    bar = view.locator("[data-testid='spark-cell-bar'][max='2']")
    bar.wait_for(timeout=30_000)  # the running job's two tasks, not the cell's sum
    done = view.locator("[data-testid='spark-cell-jobs-done']").inner_text()
    assert done == f"{earlier} jobs done", done
    save_screenshot(page, "sidebar-long-cell.png")
    save_screenshot(cell_output(page, 5), "cell-progress-long-cell.png")
    toggle.click()
    rows = group.locator("[data-testid='jss-job']")
    rows.nth(earlier).wait_for(timeout=5_000)
    assert rows.count() == earlier + 1
    # It stays open while the board changes, and after the cell ends.
    ended = sidebar.locator("[data-testid='jss-group'][data-group='a:2'][data-state='succeeded']")
    ended.wait_for(timeout=60_000)
    assert ended.locator("[data-testid='jss-job']").count() == earlier + 1
    assert ended.locator("[data-testid='jss-jobs-toggle']").inner_text() == (
        f"\u25be All {earlier + 1} jobs"
    )


def test_a_file_added_from_the_file_browser_is_read_by_the_sessions_udf(
    lab: LabServer, page: Any
) -> None:
    sidebar = open_sidebar(page)
    sidebar.locator("[data-testid='jss-session'][data-session='a']").wait_for(timeout=60_000)
    lab.api(
        "PUT",
        "/api/contents/ui_upload.csv",
        {"type": "file", "format": "text", "content": "added from the UI"},
    )
    # The file browser refreshes its listing by itself every few seconds.
    item = page.locator(".jp-DirListing-itemName", has_text="ui_upload.csv")
    item.wait_for(timeout=60_000)
    item.click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Add to Spark Session…").click()
    # Added under another name: the UDF below opens ui_lookup.csv.
    page.locator(".jp-Dialog [data-testid='jss-add-session']").select_option("a")
    page.locator(".jp-Dialog [data-testid='jss-add-alias']").fill("ui_lookup.csv")
    page.locator(".jp-Dialog button", has_text="Add").click()
    page.locator(
        ".jp-toast-message, .Toastify__toast", has_text="as 'ui_lookup.csv'"
    ).first.wait_for(timeout=30_000)

    # The sidebar lists the file under session a only.
    added = "[data-file='ui_lookup.csv']"
    files_of(sidebar, "a").and_(page.locator(added)).wait_for(timeout=30_000)
    assert files_of(sidebar, "b").and_(page.locator(added)).count() == 0
    run_cell(page, 4)
    cell_output(page, 4).locator("text=ui file: added from the UI").wait_for(timeout=120_000)


def test_switching_to_a_notebook_without_the_extension_shows_it_at_once(
    lab: LabServer, page: Any
) -> None:
    sidebar = open_sidebar(page)
    status = sidebar.locator("[data-testid='jss-status']")
    log_before = len(lab.log_text())  # the server's log of this story only
    lab.write_notebook("plain.ipynb", ["%load_ext jupyter_spark_sessions"])
    item = page.locator(".jp-DirListing-itemName", has_text="plain.ipynb")
    item.wait_for(timeout=60_000)
    item.dblclick()
    page.locator(
        ".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']"
    ).wait_for(timeout=60_000)
    # A kernel just started, on a loaded machine (CI saw more than 5 s): the switches
    # below are what must be at once.
    status.and_(page.locator("[data-status='not-loaded']")).wait_for(timeout=20_000)

    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab")
    tab.filter(has_text="sidebar.ipynb").first.click()
    status.and_(page.locator("[data-status='ready']")).wait_for(timeout=10_000)
    assert sidebar.locator("[data-testid='jss-notebook']").inner_text() == "sidebar.ipynb"

    # Known from the kernel's info (its kernel marker), not from a probe of the
    # control channel, which only gives up after 3 s (connection.ts PROBE_TIMEOUT_MS).
    tab.filter(has_text="plain.ipynb").first.click()
    status.and_(page.locator("[data-status='not-loaded']")).wait_for(timeout=2_500)
    assert sidebar.locator("[data-testid='jss-notebook']").inner_text() == "plain.ipynb"
    assert sidebar.locator("[data-testid='jss-session']").count() == 0
    empty = sidebar.locator("[data-testid='jss-empty']")
    assert empty.locator("code").inner_text() == "%load_ext jupyter_spark_sessions"
    save_screenshot(page, "sidebar-not-loaded.png")

    # %load_ext in that notebook is noticed when its cell ends.
    page.locator(".jp-NotebookPanel:visible .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    status.and_(page.locator("[data-status='ready']")).wait_for(timeout=10_000)
    assert "No sessions yet" in sidebar.locator("[data-testid='jss-empty']").inner_text()
    assert "UNKNOWN CONTROL MESSAGE TYPE" not in lab.log_text()[log_before:]


def query_cell(session: str, name: str) -> str:
    """A rate query of ``session`` into a memory table, started in a cell of its own."""
    return (
        f"%%spark_session {session}\n"
        f"q_{session} = spark.readStream.format('rate').option('rowsPerSecond', 20).load()"
        f".writeStream.format('memory').queryName('{name}').start()"
    )


def test_a_streaming_query_is_live_under_its_cell_and_in_the_sidebar_whose_stop_ends_it(
    lab: LabServer, page: Any
) -> None:
    open_notebook(
        page,
        lab,
        "streaming.ipynb",
        [SETUP_CELL, query_cell("a", "rates_a"), query_cell("b", "rates_b")],
    )
    sidebar = open_sidebar(page)
    run_all(page)
    wait_for_sessions(sidebar, "a", "b")
    query_a = sidebar.locator("[data-testid='jss-query'][data-query='rates_a']")
    query_b = sidebar.locator("[data-testid='jss-query'][data-query='rates_b']")
    # Live: the cell returned, its view and the sidebar follow the batches; the rate
    # chart once it has two points (one every 5 s).
    view_a = cell_output(page, 1).locator("[data-testid='spark-cell-query']")
    for where in (query_a, view_a):
        where.locator("[data-testid='jss-query-sparkline']").wait_for(timeout=60_000)
    assert view_a.get_attribute("data-state") == "active"
    assert "batch " in view_a.inner_text() and "rows/s" in view_a.inner_text()
    assert query_a.get_attribute("data-state") == "active"
    assert "started by a:2" in query_a.inner_text()
    check_layout(sidebar)
    save_screenshot(sidebar, "streaming-sidebar.png")
    save_screenshot(cell_output(page, 1), "streaming-cell.png")

    # The sidebar's Stop: stopping at once, then stopped as Spark reports it; b's runs on.
    query_a.locator("[data-testid='jss-stop-query']").click()
    sidebar.locator(
        "[data-testid='jss-query'][data-query='rates_a'][data-state='stopped']"
    ).wait_for(timeout=10_000)
    summary = view_a.locator("[data-testid='spark-cell-query-summary']")
    summary.wait_for(timeout=10_000)
    assert re.fullmatch(
        r"streaming query 'rates_a' of session a stopped \(from the sidebar\) after \d+ s · "
        r"[\d,]+ batch(es)?",
        summary.inner_text(),
    ), summary.inner_text()
    assert query_b.get_attribute("data-state") == "active"

    # The Stop under b's cell.
    view_b = cell_output(page, 2).locator("[data-testid='spark-cell-query']")
    view_b.locator("[data-testid='spark-cell-stop-query']").click()
    view_b.locator("[data-testid='spark-cell-query-summary']").wait_for(timeout=10_000)
    assert "stopped (from its view)" in view_b.inner_text()
    sidebar.locator(
        "[data-testid='jss-query'][data-query='rates_b'][data-state='stopped']"
    ).wait_for(timeout=10_000)


# Two notebooks on the shared Spark Connect server (issue 38): one runs a long job.
SHARED_ONE_CELLS = [
    "%load_ext jupyter_spark_sessions\n%spark_session create one_a --remote shared",
    "%%spark_session one_a\n"
    "spark.range(0, 400, 1, 400).selectExpr(\"reflect('java.lang.Thread', 'sleep', 500L)\")"
    ".collect()",
]
SHARED_TWO_CELLS = [
    "%load_ext jupyter_spark_sessions\n%spark_session create two_b --remote shared",
]


def test_the_shared_driver_section_lists_both_notebooks_and_cancels_the_others_work(
    lab: LabServer, page: Any
) -> None:
    open_notebook(page, lab, "shared_one.ipynb", SHARED_ONE_CELLS)
    run_cell(page, 0)
    cell_output(page, 0).get_by_text("Created session 'one_a'").wait_for(timeout=120_000)
    run_cell(page, 1)  # a long job (100 s on 2 slots)
    # The second notebook from the file browser: the first stays open, its cell running.
    lab.write_notebook("shared_two.ipynb", SHARED_TWO_CELLS)
    page.locator(".jp-DirListing-itemName", has_text="shared_two.ipynb").dblclick()
    page.locator(".lm-TabBar-tab.lm-mod-current", has_text="shared_two.ipynb").wait_for()
    # Its kernel has started when the status bar names it (idle before that too).
    page.locator(".jp-StatusBar-Widget", has_text="Python 3 (ipykernel) | Idle").wait_for(
        timeout=60_000
    )
    run_cell(page, 0)
    cell_output(page, 0).get_by_text("Created session 'two_b'").wait_for(timeout=120_000)
    sidebar = open_sidebar(page)
    wait_for_sessions(sidebar, "two_b")  # this notebook's own sessions, as always

    shared = sidebar.locator("[data-testid='jss-shared']")
    one = shared.locator("[data-testid='jss-shared-notebook'][data-notebook='shared_one.ipynb']")
    two = shared.locator("[data-testid='jss-shared-notebook'][data-notebook='shared_two.ipynb']")
    one_a = one.locator("[data-testid='jss-shared-session'][data-session='one_a']")
    one_a.get_by_text("1 job").wait_for(timeout=30_000)
    assert "% of slots" in one_a.inner_text()
    assert two.locator("[data-testid='jss-shared-session'][data-session='two_b']").count() == 1
    assert "(this notebook)" in two.inner_text() and "(this notebook)" not in one.inner_text()
    server = shared.locator("[data-testid='jss-shared-server']").inner_text()
    assert re.match(r"local\[\*\] · \d+ slots? · \d+ MB · up \d+ (s|min)", server), server
    check_layout(sidebar)
    save_screenshot(sidebar, "shared-driver-sidebar.png")

    # Cancel the other notebook's session from here: its cell ends, in one line.
    one_a.locator("[data-testid='jss-shared-cancel']").click()
    one_a.get_by_text("idle").wait_for(timeout=15_000)
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab").filter(
        has_text="shared_one.ipynb"
    ).first.click()
    error = cell_output(page, 1).locator("[data-mime-type='application/vnd.jupyter.stderr']")
    error.first.wait_for(timeout=15_000)
    # Who cancelled, in the user's words (issue 47, 8: "through the REST relay").
    said = error.first.inner_text()
    assert "one_a" in said and "from the sidebar's Shared driver section or by a script" in said


#: Spark's page header: its logo, a link to the UI's root (Jupyter's 404 page has none).
SPARK_LOGO = ".navbar-brand a"


def document_status(page: Any) -> int:
    """The HTTP status of the page's document, after its redirects."""
    status: int = page.evaluate("performance.getEntriesByType('navigation')[0].responseStatus")
    return status


def open_link(sidebar: Any, href: str) -> Any:
    """Click the sidebar's link to ``href`` (it opens a new tab): that tab, loaded."""
    page = sidebar.page
    with page.context.expect_page() as opened:
        # Found anew at the click: the sidebar redraws its content at each change.
        sidebar.locator(f"a[href='{href}']").first.click()
    tab = opened.value
    tab.wait_for_load_state("load")
    return tab


def check_spark_ui_page(tab: Any, lab: LabServer, href: str) -> str:
    """``tab`` shows a page of a Spark UI (200) through the Jupyter server, under the
    link's UI: ``href``'s port under the route. Its title without the application's
    name ("Spark Jobs", "Details for Job 3")."""
    prefix = re.match(rf"{re.escape(lab.url)}/spark-sessions/ui/\d+/", href)
    assert prefix, href
    assert tab.url.startswith(prefix[0]), (href, tab.url)
    assert document_status(tab) == 200, (href, tab.url, tab.title())
    assert tab.locator(SPARK_LOGO).count() == 1, (href, tab.url, tab.title())
    title: str = tab.title()
    return title.rsplit(" - ", 1)[-1]


def show_notebook(page: Any, sidebar: Any, name: str) -> None:
    """Make ``name`` the current notebook (opened from the file browser, or its tab),
    and wait until the sidebar follows it."""
    page.locator(".jp-DirListing-itemName", has_text=name).first.dblclick()
    page.locator(".lm-TabBar-tab.lm-mod-current", has_text=name).first.wait_for()
    notebook = sidebar.locator("[data-testid='jss-notebook']")
    notebook.filter(has_text=re.compile(rf"^{re.escape(name)}$")).wait_for(timeout=30_000)
    sidebar.locator("[data-testid='jss-status'][data-status='ready']").wait_for(timeout=30_000)


def test_every_link_of_the_sidebar_opens_its_spark_ui_page_through_the_jupyter_server(
    lab: LabServer, page: Any
) -> None:
    # Issue 47 (4): the Shared driver section's link gave Jupyter's 404 (the UI's root
    # redirected to {base_url}jobs/). Each link of the sidebar, clicked: a session's (a
    # classic context's UI; a Spark Connect session's, the shared server's), a job's
    # (its page; a Connect query's: the session's page of the server's Connect tab),
    # the shared driver's; and each UI's root, through Spark's own logo.
    sidebar = open_sidebar(page)
    kinds = ("jss-session-ui-link", "jss-job-ui-link", "jss-shared-ui-link")
    opened: set[str] = set()  # each address once (three sessions share one UI)
    roots: set[str] = set()
    for name in ("sidebar.ipynb", "shared_one.ipynb"):
        show_notebook(page, sidebar, name)
        sidebar.locator("[data-testid='jss-shared-ui-link']").wait_for(timeout=30_000)
        axis = sidebar.locator("[data-testid='jss-timeline-axis']").first
        caption = axis.inner_text() if name == "sidebar.ipynb" else ""
        links = {
            kind: {
                a.get_attribute("href") or ""
                for a in sidebar.locator(f"[data-testid='{kind}']").all()
            }
            for kind in kinds
        }
        assert all(links.values()), (name, links)  # each kind shows on each notebook
        assert len(sidebar.locator("a").all()) == sum(
            sidebar.locator(f"[data-testid='{kind}']").count() for kind in kinds
        ), "a link of the sidebar this test does not know"
        for kind, hrefs in links.items():
            for href in sorted(hrefs - opened):
                tab = open_link(sidebar, href)
                heading = check_spark_ui_page(tab, lab, href)
                if "/connect/session/" in href:
                    assert heading.startswith("Spark Connect Session"), (href, heading)
                elif "/jobs/job/" in href:
                    assert heading.startswith("Details for Job "), (href, heading)
                else:
                    assert href.endswith("/jobs/") and heading == "Spark Jobs", (href, heading)
                if kind == "jss-shared-ui-link":
                    save_screenshot(tab, "spark-ui-shared-driver.png")
                root = tab.locator(SPARK_LOGO).get_attribute("href") or ""
                if root not in roots:
                    # The UI's root (its logo): its jobs page, still under the route.
                    roots.add(root)
                    with tab.expect_navigation(wait_until="load"):
                        tab.locator(SPARK_LOGO).click()
                    assert check_spark_ui_page(tab, lab, href) == "Spark Jobs", tab.url
                    assert tab.url.endswith(f"{root}jobs/"), (root, tab.url)
                tab.close()
                opened.add(href)
        if caption:
            # Issue 47 (8): nothing runs and the board sends nothing, yet the timeline's
            # "… ago" caption moves with the clock (it stood still).
            axis.filter(has_not_text=caption).wait_for(timeout=10_000)
            bar = sidebar.locator("[data-testid='jss-timeline-bar']").first.bounding_box()
            assert bar is not None and bar["height"] >= 12, bar
            save_screenshot(sidebar, "sidebar-ended-groups-light.png")
    # Two UIs: the classic context of sidebar.ipynb's kernel, and the shared server's.
    assert len(roots) == 2, roots

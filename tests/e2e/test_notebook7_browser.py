"""The Spark Sessions sidebar in a real Notebook 7, in a real Chromium: opened from the
View menu, it names the notebook and kernel it follows, lists the sessions, links jobs
to Spark's UI through the Jupyter server, and its Cancel reaches the kernel while the
cell that started the job is still running. A notebook whose kernel has not loaded the
extension is shown as such at once, without a message the kernel does not know."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from .lab import NotebookServer, save_screenshot
from .notebook import (
    SIDEBAR,
    TWO_SESSIONS_CELLS,
    assert_inside,
    cell_output,
    colours,
    open_notebook,
    open_sidebar_notebook7,
    rerun_after_run_all_stopped,
    run_all,
    run_cell,
    show_spark_sessions_notebook7,
    wait_for_sessions,
)
from .test_cell_progress_browser import check_cell_progress

pytestmark = [pytest.mark.browser, pytest.mark.spark]

UNKNOWN_CONTROL = "UNKNOWN CONTROL MESSAGE TYPE"


def test_notebook7_sidebar_lists_sessions_and_cancels_a_busy_cells_group(
    notebook7: NotebookServer, notebook7_page: Any
) -> None:
    page = notebook7_page
    open_notebook(page, notebook7, "nb7.ipynb", TWO_SESSIONS_CELLS, app="notebook")
    sidebar = open_sidebar_notebook7(page)
    # View > Right Sidebar > "Show Spark Sessions" with the sidebar open: it stays
    # open, as its label says (issue 39, 5: it hid it).
    show_spark_sessions_notebook7(page)
    page.wait_for_timeout(500)
    assert sidebar.is_visible()
    assert sidebar.locator("[data-testid='jss-notebook']").inner_text() == "nb7.ipynb"
    assert sidebar.locator("[data-testid='jss-kernel']").inner_text() == "Python 3 (ipykernel)"

    run_all(page)  # the last cell waits for b: it runs after the cancel, queued
    wait_for_sessions(sidebar, "a", "b")
    group_a = sidebar.locator("[data-testid='jss-group'][data-group='a:3'][data-state='running']")
    group_a.wait_for(timeout=120_000)
    group_b = sidebar.locator("[data-testid='jss-group'][data-group='b:2']")
    assert group_b.get_attribute("data-state") == "running"
    sidebar.locator("[data-testid='jss-status'][data-status='ready']").wait_for(timeout=10_000)
    # Progress: the running stage under its job, and the session's timeline.
    group_a.locator("[data-testid='jss-stage-progress']").first.wait_for(timeout=30_000)
    bar = sidebar.locator("[data-testid='jss-timeline'][data-session='a'] [data-group='a:3']")
    assert bar.get_attribute("data-state") == "running"

    # Spark's UI through the Jupyter server: the session's job list and the job's page.
    session_link = sidebar.locator(
        "[data-testid='jss-session'][data-session='a'] [data-testid='jss-session-ui-link']"
    )
    href = session_link.get_attribute("href")
    match = re.fullmatch(rf"{re.escape(notebook7.url)}/spark-sessions/ui/(\d+)/jobs/", href or "")
    assert match, href
    job_link = group_a.locator("[data-testid='jss-job-ui-link']").first
    assert re.fullmatch(
        rf"{re.escape(notebook7.url)}/spark-sessions/ui/{match[1]}/jobs/job/\?id=\d+",
        job_link.get_attribute("href") or "",
    ), job_link.get_attribute("href")
    assert job_link.get_attribute("target") == "_blank"
    # The browser is logged in (cookie): the proxied Spark UI answers it.
    assert page.request.get(href).status == 200

    # Nothing clipped at the sidebar's default width.
    assert_inside(sidebar.locator("[data-testid='jss-cancel-group']"), sidebar)
    assert_inside(group_a.locator("[data-testid='jss-cancel-group']"), group_a)
    save_screenshot(page, "notebook7-sidebar.png")

    group_a.locator("[data-testid='jss-cancel-group']").click()  # the cell is busy
    cell_output(page, 2).locator("text=JobsCancelled: The Spark jobs of a:3 (job").first.wait_for(
        timeout=30_000
    )
    assert "were cancelled from the sidebar." in cell_output(page, 2).inner_text()
    sidebar.locator("[data-testid='jss-group'][data-group='a:3'][data-state='cancelled']").wait_for(
        timeout=30_000
    )
    rerun_after_run_all_stopped(page, 3)
    cell_output(page, 3).locator("text=b result: {'sum': 45}").wait_for(timeout=120_000)
    sidebar.locator("[data-testid='jss-group'][data-group='b:2'][data-state='succeeded']").wait_for(
        timeout=30_000
    )
    assert UNKNOWN_CONTROL not in notebook7.log_text()


def test_notebook7_shows_a_kernel_without_the_extension_at_once(
    notebook7: NotebookServer, notebook7_page: Any
) -> None:
    page = notebook7_page
    # The third cell is never run: its editor is read as SQL.
    cells = ["select = 1", "%load_ext jupyter_spark_sessions", "%%spark_sql\nSELECT 'x' -- note"]
    open_notebook(page, notebook7, "plain7.ipynb", cells, app="notebook")
    started = time.monotonic()  # the kernel is up (open_notebook waited for it)
    # The first test left the sidebar open on nb7.ipynb's page: it opens by itself on
    # this notebook's page too (issue 28, 9: it had to be opened again).
    page.locator(SIDEBAR).wait_for(state="visible", timeout=5_000)
    sidebar = open_sidebar_notebook7(page)
    status = sidebar.locator("[data-testid='jss-status']")
    status.and_(page.locator("[data-status='not-loaded']")).wait_for(timeout=1_000)
    assert time.monotonic() - started < 1.5  # the menu clicks included
    assert sidebar.locator("[data-testid='jss-notebook']").inner_text() == "plain7.ipynb"
    empty = sidebar.locator("[data-testid='jss-empty']")
    assert empty.locator("code").inner_text() == "%load_ext jupyter_spark_sessions"
    assert "`" not in empty.inner_text()

    run_cell(page, 0)  # a cell that does not load it: still not loaded
    page.locator(".jp-Notebook .jp-Cell").nth(0).locator(
        ".jp-InputPrompt", has_text="[1]"
    ).wait_for(timeout=30_000)
    page.wait_for_timeout(500)  # the check after the cell has answered
    assert status.get_attribute("data-status") == "not-loaded"
    run_cell(page, 1)  # %load_ext: noticed when the cell ends
    status.and_(page.locator("[data-status='ready']")).wait_for(timeout=10_000)
    assert UNKNOWN_CONTROL not in notebook7.log_text()

    # A %%spark_sql cell's body is SQL in Notebook 7's editor too; a Python cell is not.
    theme, sql = colours(page, 2)
    assert sql["SELECT"] == theme["keyword"] and sql["'x'"] == theme["string"], (sql, theme)
    assert sql["-- note"] == theme["comment"], (sql, theme)
    assert colours(page, 0)[1]["select"] != theme["keyword"]


def test_notebook7_shows_progress_under_the_running_cell_and_cancels_it_there(
    notebook7: NotebookServer, notebook7_page: Any
) -> None:
    check_cell_progress(notebook7, notebook7_page, "notebook")


def test_notebook7_shows_a_streaming_query_under_its_cell_and_stops_it_there(
    notebook7: NotebookServer, notebook7_page: Any
) -> None:
    page = notebook7_page
    cells = [
        "%load_ext jupyter_spark_sessions\n%spark_session create a",
        "%%spark_session a\n"
        "q = spark.readStream.format('rate').option('rowsPerSecond', 20).load()"
        ".writeStream.format('memory').queryName('nb7_rates').start()",
    ]
    open_notebook(page, notebook7, "nb7-streaming.ipynb", cells, app="notebook")
    run_all(page)
    view = cell_output(page, 1).locator("[data-testid='spark-cell-query']")
    # Live after the cell returned: the batches move on under it.
    view.locator("[data-figure='batch']").filter(has_text=re.compile(r"batch [1-9]")).wait_for(
        timeout=120_000
    )
    assert view.get_attribute("data-state") == "active"
    view.locator("[data-testid='spark-cell-stop-query']").click()
    summary = view.locator("[data-testid='spark-cell-query-summary']")
    summary.wait_for(timeout=10_000)
    assert summary.inner_text().startswith(
        "streaming query 'nb7_rates' of session a stopped (from its view) after "
    ), summary.inner_text()

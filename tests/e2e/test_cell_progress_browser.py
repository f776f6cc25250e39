"""The in-cell progress view in a real Chromium, in JupyterLab (here) and in Notebook 7
(test_notebook7_browser.py runs the same story): it
appears under the running cell by itself, its task count moves, its Cancel ends the busy
cell with that cell's group cancelled while another session's job finishes, and a cell
that ends on its own leaves one summary line."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from .lab import LabServer, save_screenshot, set_theme
from .notebook import (
    B_BACKGROUND_CELL,
    B_RESULT_CELL,
    SETUP_CELL,
    cell_output,
    open_notebook,
    rerun_after_run_all_stopped,
    run_all,
    run_cell,
)

pytestmark = [pytest.mark.browser, pytest.mark.spark]


# Session a: 30 tasks of two 1 s rows each, a minute of work on the slot b leaves free.
A_PROGRESS_CELL = """%spark_session use a
from pyspark.sql.functions import udf
@udf("long")
def _step(x):
    import time
    time.sleep(1)
    return x
len(spark.range(0, 60, 1, 30).select(_step("id")).collect())"""

# About 4 s: ends by itself (Run All stopped at the cancelled cell: run after).
A_SHORT_CELL = "len(spark.range(0, 8, 1, 8).select(_step('id')).collect())"

# One skewed key: of 16 tasks, the one of id 0 takes 4 s, the others 0.1 s.
A_SKEWED_CELL = """def _by_key(x):
    import time
    time.sleep(4 if x == 0 else 0.1)
    return x
len(spark.range(0, 16, 1, 16).select(udf(_by_key, "long")("id")).collect())"""

VIEW = "[data-testid='spark-cell-progress']"


def done_tasks(view: Any) -> int:
    text = view.locator("[data-testid='spark-cell-tasks']").first.inner_text()
    match = re.match(r"([\d,]+)/", text)
    assert match, text
    return int(match[1].replace(",", ""))


def test_progress_under_the_running_cell_moves_cancels_that_cell_and_sums_up(
    lab: LabServer, page: Any
) -> None:
    check_cell_progress(lab, page, "lab")


def check_cell_progress(server: LabServer, page: Any, app: str) -> None:
    """The whole story in ``app`` ("lab", or "notebook": Notebook 7, whose module runs it
    with its own server: one Playwright per module)."""
    name = f"progress-{app}.ipynb"
    cells = [
        SETUP_CELL,
        B_BACKGROUND_CELL,
        A_PROGRESS_CELL,
        B_RESULT_CELL,
        A_SHORT_CELL,
        A_SKEWED_CELL,
    ]
    open_notebook(page, server, name, cells, app=app)
    run_all(page)

    view = cell_output(page, 2).locator(VIEW)
    row = view.locator("[data-testid='spark-cell-group'][data-group='a:3'][data-state='running']")
    row.wait_for(timeout=120_000)
    first = done_tasks(view)
    deadline = time.monotonic() + 60
    while done_tasks(view) <= first and time.monotonic() < deadline:  # it moves
        page.wait_for_timeout(250)
    assert done_tasks(view) > first
    assert view.locator("progress").count() == 1
    assert "collect" in view.inner_text() or "count" in view.inner_text()  # the call site
    # Inside the running group: its stage as a row (tasks of 30), and the slot chart
    # with a lane per executor and a tick where the stage started (issue 48).
    stage_row = view.locator("[data-testid='jss-stage-row'][data-status='active']")
    stage_row.first.wait_for(timeout=30_000)
    assert re.search(r"\d+/30", stage_row.first.inner_text()), stage_row.first.inner_text()
    chart = view.locator("[data-testid='jss-slot-chart']")
    chart.wait_for(timeout=30_000)
    assert chart.locator("[data-testid='jss-slot-lane']").count() >= 1
    assert chart.locator("[data-testid='jss-stage-mark']").count() >= 1
    if app == "lab":
        save_screenshot(cell_output(page, 2), "cell-progress.png")

    view.locator("[data-testid='spark-cell-cancel']").click()  # the cell is busy
    output = cell_output(page, 2)
    output.locator("text=JobsCancelled: The Spark jobs of a:3 (job").first.wait_for(timeout=30_000)
    assert "were cancelled from the cell's progress view." in output.inner_text()
    summary = view.locator("[data-testid='spark-cell-summary']")
    summary.wait_for(timeout=30_000)
    assert summary.inner_text().startswith("cancelled · 1 job · "), summary.inner_text()
    assert view.locator("button, progress").count() == 0

    # The other session's job was not touched.
    rerun_after_run_all_stopped(page, 3)
    cell_output(page, 3).locator("text=b result: {'sum': 45}").wait_for(timeout=120_000)
    # A cell that ends by itself: one line, succeeded.
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=60_000)
    run_cell(page, 4)
    ended = cell_output(page, 4).locator(f"{VIEW} [data-testid='spark-cell-summary']")
    ended.wait_for(timeout=60_000)
    assert re.fullmatch(r"succeeded · 1 job · 8/8 tasks · [\d.]+ s", ended.inner_text()), (
        ended.inner_text()
    )
    # Its inside folds into the summary line: "1 stage", its row within.
    inside = cell_output(page, 4).locator(f"{VIEW} [data-testid='spark-cell-inside']")
    assert inside.locator("summary").inner_text().startswith("1 stage"), inside.inner_text()
    if app == "lab":
        save_screenshot(cell_output(page, 4), "cell-progress-summary.png")

    # A skewed job: its summary opens on its finding, the rows and the chart beneath.
    run_cell(page, 5)
    skewed = cell_output(page, 5).locator(f"{VIEW} [data-testid='spark-cell-inside']")
    finding = skewed.locator("[data-testid='jss-finding']")
    finding.first.wait_for(timeout=60_000)
    assert "skewed keys" in finding.first.inner_text(), finding.first.inner_text()
    chart = skewed.locator("[data-testid='jss-slot-chart']")
    assert finding.first.is_visible() and chart.is_visible()
    if app == "lab":
        save_screenshot(cell_output(page, 5), "cell-inside-skew.png")
        set_theme(page, "JupyterLab Dark")
        try:
            save_screenshot(cell_output(page, 5), "cell-inside-skew-dark.png")
        finally:
            set_theme(page, "JupyterLab Light")
    else:
        save_screenshot(cell_output(page, 5), "cell-inside-skew-notebook7.png")
    if app == "lab":
        # Saved and opened again: the cell keeps the summary and its inside.
        page.keyboard.press("Control+s")
        page.locator(".jp-mod-dirty").wait_for(state="detached", timeout=30_000)
        page.reload()
        saved = cell_output(page, 4).locator(f"{VIEW} [data-testid='spark-cell-inside']")
        saved.wait_for(timeout=60_000)
        assert saved.locator("summary").inner_text().startswith("1 stage")
        saved.locator("summary").click()
        assert saved.locator("[data-testid='jss-stage-row']").count() == 1

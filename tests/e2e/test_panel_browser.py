"""The in-notebook panel's Cancel, clicked in a real JupyterLab while the cell runs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .lab import LabServer, save_screenshot
from .notebook import (
    A_LONG_CELL,
    B_BACKGROUND_CELL,
    B_RESULT_CELL,
    SETUP_CELL,
    cell_output,
    open_notebook,
    open_sidebar,
    rerun_after_run_all_stopped,
    run_all,
    run_cell,
)

pytestmark = [pytest.mark.browser, pytest.mark.spark]

SEVEN_COUNTS_CELL = (
    "%%spark_session a\nfor _ in range(7):\n    spark.range(1).count()\nprint('seven counts done')"
)


def test_panel_cancel_reaches_the_busy_kernel(lab: LabServer, page: Any) -> None:
    cells = [SETUP_CELL, "%spark_session panel", B_BACKGROUND_CELL, A_LONG_CELL]
    open_notebook(page, lab, "panel.ipynb", [*cells, B_RESULT_CELL, SEVEN_COUNTS_CELL])
    # Run the first four cells; the fifth waits for b's thread after the cancel.
    run_all(page)
    # The panel's button (the in-cell view under the busy cell has a Cancel too).
    cancel = page.locator(".widget-button[title^='Cancel job group a:']")
    cancel.wait_for(timeout=120_000)
    group = cancel.get_attribute("title").removeprefix("Cancel job group ")
    page.locator(".jp-Notebook .jp-Cell").nth(3).locator(
        ".jp-InputPrompt", has_text="[*]"
    ).wait_for(timeout=30_000)
    page.locator(".widget-html", has_text=f"{group} running").first.wait_for(timeout=60_000)
    # The sidebar shows the same board.
    sidebar = open_sidebar(page)
    sidebar.locator(
        f"[data-testid='jss-group'][data-group='{group}'][data-state='running']"
    ).wait_for(timeout=30_000)
    save_screenshot(page, "panel-running.png")

    cancel.click()  # the cell is still busy: the click must reach the kernel anyway
    cell_output(page, 3).locator(
        f"text=JobsCancelled: The Spark jobs of {group} (job"
    ).first.wait_for(timeout=30_000)
    assert "were cancelled from the panel." in cell_output(page, 3).inner_text()
    page.locator(".widget-html", has_text=f"{group} cancelled").first.wait_for(timeout=30_000)
    sidebar.locator(
        f"[data-testid='jss-group'][data-group='{group}'][data-state='cancelled']"
    ).wait_for(timeout=30_000)

    rerun_after_run_all_stopped(page, 4)
    cell_output(page, 4).locator("text=b result: {'sum': 45}").wait_for(timeout=120_000)

    # A long cell: its older jobs are counted, and a click on the count lists them.
    run_cell(page, 5)
    cell_output(page, 5).locator("text=seven counts done").wait_for(timeout=60_000)
    more = page.locator(".widget-toggle-button", has_text=re.compile(r"^▸ \d+ earlier jobs"))
    more.first.wait_for(timeout=30_000)
    # The group's own box (held: the toggle's text changes with the click).
    group_box = more.first.locator("xpath=..").element_handle()
    assert len(re.findall(r"job \d+ succeeded", group_box.inner_text())) == 5
    more.first.click()
    page.locator(".widget-toggle-button", has_text=re.compile(r"^▾ \d+ earlier jobs")).wait_for(
        timeout=10_000
    )
    assert len(re.findall(r"job \d+ succeeded", group_box.inner_text())) >= 7
    group_box.scroll_into_view_if_needed()
    save_screenshot(page, "panel-long-cell.png")

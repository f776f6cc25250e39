"""The Spark Sessions sidebar in a real JupyterLab, in a real Chromium."""

from __future__ import annotations

from typing import Any

import pytest

from .lab import LabServer

pytestmark = [pytest.mark.browser]

SIDEBAR = "#jupyter-spark-sessions-sidebar"


def open_sidebar(page: Any) -> Any:
    tab = page.locator(f"li[data-id='{SIDEBAR[1:]}']")
    tab.wait_for(timeout=30_000)
    if not page.locator(SIDEBAR).is_visible():
        tab.click()
    page.locator(SIDEBAR).wait_for(state="visible", timeout=10_000)
    return page.locator(SIDEBAR)


def test_the_sidebar_is_in_jupyterlab_and_opens(lab: LabServer, page: Any) -> None:
    sidebar = open_sidebar(page)
    assert "%load_ext jupyter_spark_sessions" in sidebar.inner_text()

"""The sidebar in a real JupyterLab whose kernels run behind a real Kernel Gateway
(``--GatewayClient.url``): it lists the sessions of the notebook's kernel, and its
Cancel reaches the busy kernel through both servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .gateway import KernelGateway, lab_behind
from .lab import LabServer, browser_page, save_screenshot
from .notebook import (
    TWO_SESSIONS_CELLS,
    cell_output,
    open_notebook,
    open_sidebar,
    rerun_after_run_all_stopped,
    run_all,
    wait_for_sessions,
)
from .waiting import running

pytestmark = [pytest.mark.browser, pytest.mark.spark]


@pytest.fixture(scope="module")
def gateway_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    base = tmp_path_factory.mktemp("gateway")
    with running(KernelGateway(base)) as gateway, running(lab_behind(gateway, base)) as server:
        yield server


@pytest.fixture(scope="module")
def gateway_page(gateway_lab: LabServer) -> Iterator[Any]:
    with browser_page(gateway_lab) as page:
        yield page


def test_sidebar_behind_a_gateway_lists_sessions_and_cancels_a_busy_cell(
    gateway_lab: LabServer, gateway_page: Any
) -> None:
    lab, page = gateway_lab, gateway_page
    open_notebook(page, lab, "gateway.ipynb", TWO_SESSIONS_CELLS)
    sidebar = open_sidebar(page)
    run_all(page)
    wait_for_sessions(sidebar, "a", "b")
    group_a = sidebar.locator("[data-testid='jss-group'][data-group='a:3']")
    group_a.locator("[data-testid='jss-stage-progress'][data-active='1']").first.wait_for(
        timeout=120_000
    )
    assert (
        sidebar.locator("[data-testid='jss-group'][data-group='b:2']").get_attribute("data-state")
        == "running"
    )
    save_screenshot(page, "sidebar-behind-a-gateway.png")

    group_a.locator("[data-testid='jss-cancel-group']").click()  # the cell is busy
    cell_output(page, 2).locator("text=JobsCancelled: The Spark jobs of a:3 (job").first.wait_for(
        timeout=30_000
    )
    assert "were cancelled from the sidebar." in cell_output(page, 2).inner_text()
    rerun_after_run_all_stopped(page, 3)
    cell_output(page, 3).locator("text=b result: {'sum': 45}").wait_for(timeout=120_000)
    sidebar.locator("[data-testid='jss-group'][data-group='b:2'][data-state='succeeded']").wait_for(
        timeout=30_000
    )

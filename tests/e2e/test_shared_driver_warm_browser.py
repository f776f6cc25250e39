"""The sidebar's Shared driver section of a JupyterLab started with the shared driver's
warm start (``shared_driver_prewarm``, issue 50, 4): before any notebook asked, it shows
the warm driver and says it is idle and when it stops."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .lab import KERNEL_CONFIG, LabServer, browser_page, save_screenshot
from .notebook import cut_elements, open_sidebar
from .waiting import running

pytestmark = [pytest.mark.browser, pytest.mark.spark]

WARM_CONFIG = KERNEL_CONFIG + (
    "c.SparkSessionsConfig.shared_driver_prewarm = True\n"
    "c.SparkSessionsConfig.shared_driver_master = 'local[2]'\n"
)


@pytest.fixture(scope="module")
def warm_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    root = tmp_path_factory.mktemp("warm-lab")
    # A runtime folder of its own: the shared driver's rendezvous is there, and another
    # module's JupyterLab (the sidebar's shared-driver test) must neither join this
    # driver nor have this one join its own.
    runtime = root.parent / "warm-lab-runtime"
    env = {"JUPYTER_RUNTIME_DIR": str(runtime)}
    with running(LabServer(root, extra_env=env, kernel_config=WARM_CONFIG)) as server:
        yield server


def test_the_sidebar_says_the_warm_driver_is_idle_and_when_it_stops(warm_lab: LabServer) -> None:
    page: Any
    with browser_page(warm_lab) as page:
        page.goto(f"{warm_lab.url}/lab?token={warm_lab.token}")
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        sidebar = open_sidebar(page)
        shared = sidebar.locator("[data-testid='jss-shared']")
        idle = shared.locator("[data-testid='jss-shared-idle']")
        idle.wait_for(timeout=120_000)  # the driver warms in the background
        assert idle.inner_text() == (
            "Warm and idle: no notebook has a session on it yet; it stops after 10 min without one."
        )
        server = shared.locator("[data-testid='jss-shared-server']").inner_text()
        assert server.startswith("local[2] · "), server
        assert shared.locator("[data-testid='jss-shared-notebook']").count() == 0
        assert cut_elements(sidebar, ".jp-SparkSessions-sharedIdle") == []
        save_screenshot(sidebar, "shared-driver-warm.png")

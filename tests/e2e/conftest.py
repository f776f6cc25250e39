"""Fixtures of the browser tests: one JupyterLab server and one Chromium per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .lab import LabServer, browser_page


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def page(lab: LabServer) -> Iterator[Any]:
    with browser_page(lab) as page:
        page.goto(f"{lab.url}/lab?token={lab.token}")
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        yield page

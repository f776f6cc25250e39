"""Fixtures of the browser tests: one server (JupyterLab, or Notebook 7) and one Chromium
per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .lab import LabServer, NotebookServer, browser_page
from .waiting import running

# Notebook 7's kernels keep Spark's UI on: its sidebar test follows the UI links.
SPARK_UI_KERNEL_CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.showConsoleProgress': 'false'}\n"
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    with running(LabServer(tmp_path_factory.mktemp("lab"))) as server:
        yield server


@pytest.fixture(scope="module")
def page(lab: LabServer) -> Iterator[Any]:
    with browser_page(lab) as page:
        page.goto(f"{lab.url}/lab?token={lab.token}")
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        yield page


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotebookServer]:
    root = tmp_path_factory.mktemp("notebook7")
    with running(NotebookServer(root, kernel_config=SPARK_UI_KERNEL_CONFIG)) as server:
        yield server


@pytest.fixture(scope="module")
def notebook7_page(notebook7: NotebookServer) -> Iterator[Any]:
    with browser_page(notebook7) as page:
        yield page

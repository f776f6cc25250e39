"""A real JupyterLab or Notebook 7 server and a real Chromium (Debian's, driven by
Playwright) for the browser tests. Playwright's own browser download is never used."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .waiting import NO_PORT_RETRIES, start_on_a_free_port, stop_process, wait_for_server

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: Where the browser tests save their screenshots: build/screenshots, so a test run leaves
#: the clone clean. `make screenshots` points this at docs/images (what the README shows).
SCREENSHOTS = Path(
    os.environ.get("JSS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "build" / "screenshots")
)


def save_screenshot(target: Any, name: str) -> None:
    """A screenshot of ``target`` (a Playwright page or locator) as SCREENSHOTS/``name``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(SCREENSHOTS / name))


KERNEL_CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false'}\n"
)


def set_theme(page: Any, name: str) -> None:
    """JupyterLab's Settings > Theme > ``name``, then wait until it is applied."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.click()
    page.locator(".lm-Menu-itemLabel", has_text=name).first.click()
    page.locator(f"body[data-jp-theme-name='{name}']").wait_for(state="attached", timeout=30_000)
    page.wait_for_timeout(1_000)  # its stylesheet applied, the layout settled


def chromium_path() -> str:
    """Debian's Chromium (scripts/ensure-chromium.sh installs it)."""
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        found = candidate and shutil.which(candidate)
        if found:
            return found
    raise RuntimeError("Chromium not found: run scripts/ensure-chromium.sh")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LabServer:
    """``jupyter lab`` on 127.0.0.1 with a random token, serving ``root``; ``extra_env``
    adds to its environment, ``kernel_config`` replaces the kernels' IPython config,
    ``extra_args`` adds to its command line (``KernelGateway.server_args``)."""

    #: The ``jupyter`` subcommand, and the options of that app only.
    app = "lab"
    app_options = (
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    )

    def __init__(
        self,
        root: Path,
        extra_env: dict[str, str] | None = None,
        kernel_config: str = KERNEL_CONFIG,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.root = root
        self.token = secrets.token_hex(16)
        ipython = root.parent / "ipython"
        (ipython / "profile_default").mkdir(parents=True, exist_ok=True)
        (ipython / "profile_default" / "ipython_config.py").write_text(kernel_config)
        # User settings of this server only: no news pop-up over the screenshots.
        settings = root.parent / "lab-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        env = dict(
            os.environ,
            IPYTHONDIR=str(ipython),
            PYSPARK_PYTHON=sys.executable,
            JUPYTERLAB_SETTINGS_DIR=str(root.parent / "lab-settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(root.parent / "lab-workspaces"),
        )
        env.update(extra_env or {})

        def start() -> None:
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            command = [
                sys.executable,
                "-m",
                "jupyter",
                self.app,
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                NO_PORT_RETRIES,
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={root}",
                *self.app_options,
                *extra_args,
            ]
            if os.getuid() == 0:
                command.append("--allow-root")
            self.log = open(root.parent / f"jupyter-{self.app}.log", "w")  # noqa: SIM115
            self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=self.log)
            name = f"jupyter {self.app}"
            wait_for_server(self.process, self._answers, name, self.log.name, 90, 0.5)

        start_on_a_free_port(start)

    def _answers(self) -> bool:
        self.api("GET", "/api/status")
        return True

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the server's REST API with the token."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def write_notebook(self, name: str, cells: list[str]) -> None:
        """Save a notebook of code cells on the server."""
        notebook = {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "cells": [
                {
                    "cell_type": "code",
                    "id": f"cell-{i}",
                    "metadata": {},
                    "source": source,
                    "outputs": [],
                    "execution_count": None,
                }
                for i, source in enumerate(cells)
            ],
        }
        self.api("PUT", f"/api/contents/{name}", {"type": "notebook", "content": notebook})

    def log_text(self) -> str:
        """What the server (and its kernels, through it) logged so far."""
        self.log.flush()
        return Path(self.log.name).read_text()

    def stop(self) -> None:
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")
        stop_process(self.process, self.log)


class NotebookServer(LabServer):
    """``jupyter notebook`` (Notebook 7): the same server, its own frontend."""

    app = "notebook"
    app_options = ()


@contextmanager
def browser_page(server: LabServer) -> Iterator[Any]:
    """A Chromium page logged in to ``server`` (token in the first URL)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        try:
            yield page
        finally:
            context.close()
            browser.close()

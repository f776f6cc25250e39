"""The Spark UI link through the Jupyter server: a real ``jupyter server`` (with a
JupyterHub-like base URL and a token) starts a real kernel; a managed session runs a
job; the link built from what the board reports (the session's ``ui_url``, the group's
job id) opens that job's page through jupyter-server-proxy, with every asset and link
of the page, and nothing without the token."""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import free_port
from e2e.waiting import (
    NO_PORT_RETRIES,
    start_on_a_free_port,
    stop_process,
    wait_for_server,
    wait_until,
)

from jupyter_spark_sessions.magics import spark_ui
from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

#: What a JupyterHub single-user server's base URL looks like: links must not assume "/".
BASE_URL = "/user/tester/"

#: The kernel's Spark: the UI on (the other tests turn it off), on a port Spark picks.
KERNEL_CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'true', 'spark.ui.port': '0', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
)

RELAY = "jupyter-spark-sessions/api/kernels/{}/requests"


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class JupyterServer:
    """``jupyter server`` on 127.0.0.1 under ``base_url`` (a JupyterHub user's prefix),
    with a random token; its kernels' connection files in ``runtime_dir``."""

    def __init__(
        self,
        base: Path,
        base_url: str = BASE_URL,
        extra_env: dict[str, str] | None = None,
        kernel_config: str = "",
        runtime_dir: Path | None = None,
    ) -> None:
        self.base_url = base_url
        self.token = secrets.token_hex(16)
        #: Shared by Jupyter servers of one user that are given the same one.
        self.runtime_dir = runtime_dir or base / "runtime"
        (base / "root").mkdir()
        profile = base / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        (profile / "ipython_config.py").write_text(KERNEL_CONFIG + kernel_config)
        env = dict(
            os.environ,
            IPYTHONDIR=str(base / "ipython"),
            JUPYTER_RUNTIME_DIR=str(self.runtime_dir),
            PYSPARK_PYTHON=sys.executable,
            **(extra_env or {}),
        )
        self.log_path = base / "jupyter-server.log"

        def start() -> None:
            self.port = free_port()
            command = [
                sys.executable,
                "-m",
                "jupyter",
                "server",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                NO_PORT_RETRIES,
                f"--ServerApp.base_url={base_url}",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={base / 'root'}",
            ]
            if os.getuid() == 0:
                command.append("--allow-root")
            self._log = open(self.log_path, "w")  # noqa: SIM115
            self.process = subprocess.Popen(command, env=env, stdout=self._log, stderr=self._log)
            wait_for_server(self.process, self._answers, "jupyter server", self.log_path, 90, 0.5)

        start_on_a_free_port(start)

    def _answers(self) -> bool:
        return self.request("GET", "api/status").status == 200

    def request(
        self,
        method: str,
        path: str,
        token: str | None = "",
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """One HTTP request to ``path`` (under the base URL, or absolute when it starts
        with "/"), with the server's token unless ``token`` is None; redirects are not
        followed."""
        target = path if path.startswith("/") else spark_ui.join_base_url(self.base_url, path)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"token {token or self.token}"
        data = json.dumps(body).encode() if body is not None else None
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, target, body=data, headers=sent)
            response = connection.getresponse()
            return Reply(response.status, response.headers, response.read())
        finally:
            connection.close()

    def api(self, method: str, path: str, body: Any = None) -> Any:
        reply = self.request(method, path, body=body)
        assert reply.status in (200, 201, 204), (reply.status, reply.text[:500])
        return json.loads(reply.body) if reply.body else None

    def stop(self) -> None:
        for kernel in self.api("GET", "api/kernels"):
            self.api("DELETE", f"api/kernels/{kernel['id']}")
        stop_process(self.process, self._log)


@dataclass
class RanJob:
    server: JupyterServer
    ui_url: str  # the session's, as the board reports it
    job: dict[str, Any]  # the cell's last job, as the board reports it
    kernel: Kernel
    kernel_id: str

    @property
    def job_id(self) -> int:
        return int(self.job["id"])


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RanJob]:
    server = JupyterServer(tmp_path_factory.mktemp("spark-ui-proxy"))
    kernel: Kernel | None = None
    try:
        kernel_id = server.api("POST", "api/kernels", {"name": "python3"})["id"]
        connection_file = server.runtime_dir / f"kernel-{kernel_id}.json"
        # The server says "starting" until a frontend connects: wait for the file only
        # (attach retries until the kernel answers).
        wait_until(connection_file.exists, 60, 0.1)
        kernel = Kernel.attach(str(connection_file))
        kernel.ok("%load_ext jupyter_spark_sessions\n%spark_session create a")
        kernel.ok("%%spark_session a\nspark.range(0, 1000, 1, 4).selectExpr('sum(id)').collect()")
        group, session = _wait_for_group(server, kernel_id)
        yield RanJob(server, session["ui_url"], group["jobs"][-1], kernel, kernel_id)
    finally:
        if kernel is not None:
            kernel.close()
        server.stop()


def _wait_for_group(server: JupyterServer, kernel_id: str, name: str = "a") -> tuple[Any, Any]:
    """The board's finished group of session ``name`` with its jobs, and the session."""
    deadline = time.monotonic() + 60
    board: Any = None
    while time.monotonic() < deadline:
        reply = server.api("POST", RELAY.format(kernel_id), {"version": 1, "action": "list"})
        board = reply["board"]
        done = [
            g
            for g in board["groups"]
            if g["session"] == name and g["jobs"] and g["state"] != "running"
        ]
        if done:
            session = next(s for s in board["sessions"] if s["name"] == name)
            return done[-1], session
        time.sleep(0.3)
    raise AssertionError(f"no finished group of session {name}: {board}")


def _page_urls(html: str) -> set[str]:
    """Every href and src of a page (HTML-unescaped), fragments and javascript: aside."""
    found = {u.replace("&amp;", "&") for u in re.findall(r'(?:href|src)="([^"]*)"', html)}
    return {u for u in found if u and not u.startswith(("#", "javascript:"))}


def _proxy_prefix(ui_url: str) -> str:
    return spark_ui.join_base_url(BASE_URL, f"{spark_ui.PROXY_ROUTE}/{spark_ui.ui_port(ui_url)}")


def test_the_board_reports_a_linkable_ui_on_loopback(ran: RanJob) -> None:
    assert urlsplit(ran.ui_url).hostname == "127.0.0.1", ran.ui_url
    assert spark_ui.no_link_reason(ran.ui_url) == ""


def test_job_link_opens_that_jobs_page_through_the_jupyter_server(ran: RanJob) -> None:
    path = spark_ui.job_path(ran.ui_url, ran.job_id)
    assert path is not None
    reply = ran.server.request("GET", path)
    assert reply.status == 200, reply.text[:500]
    assert reply.headers["Content-Type"].startswith("text/html")
    assert f"Details for Job {ran.job_id}" in reply.text
    # The page is the board's job: its call site, and exactly its stages.
    assert ran.job["name"] and ran.job["name"] in reply.text
    stage_ids = {int(s) for s in re.findall(r"stages/stage/\?id=(\d+)", reply.text)}
    assert stage_ids == set(ran.job["stage_ids"]), (stage_ids, ran.job["stage_ids"])


def test_the_job_pages_links_and_assets_stay_under_the_proxy_and_load(ran: RanJob) -> None:
    prefix = _proxy_prefix(ran.ui_url)
    page = ran.server.request("GET", spark_ui.job_path(ran.ui_url, ran.job_id) or "")
    urls = _page_urls(page.text)
    # Spark prefixes its links with the X-Forwarded-Context the proxy sends; its scripts
    # call the REST API under the same root.
    assert f"setUIRoot('{prefix}')" in page.text
    outside = sorted(u for u in urls if not u.startswith(prefix + "/"))
    assert not outside, f"links that leave {prefix}/: {outside}"
    assets = sorted(u for u in urls if u.startswith(prefix + "/static/"))
    assert any(u.endswith(".css") for u in assets) and any(u.endswith(".js") for u in assets)
    links = sorted(u for u in urls if u not in assets and u != prefix + "/")
    assert any("/stages/stage/" in u for u in links), links
    # Its stages ran in session a's scheduler pool, which the page links to.
    assert any(u.endswith("/stages/pool?poolname=a") for u in links), links
    # The root (the logo's link): Spark's own handler redirects to an absolute URL
    # without the prefix; the contexts this project starts redirect relatively
    # (java/jss/UiRootRedirect.java), which stays under the proxy.
    assert prefix + "/" in urls
    root = ran.server.request("GET", prefix + "/")
    assert root.status == 302 and root.headers["Location"] == "jobs/", root.headers
    for url in [*assets, *links, f"{prefix}/api/v1/applications"]:
        reply = ran.server.request("GET", url)
        if reply.status == 301:  # Jetty adds a slash (the FAIR pool links: stages/pool?...)
            location = reply.headers["Location"]
            assert location.startswith(prefix + "/"), f"{url} leaves the proxy: {location}"
            reply = ran.server.request("GET", location)
        assert reply.status == 200, (url, reply.status, reply.text[:300])
        assert reply.body, url


def test_jobs_link_opens_the_sessions_jobs_page(ran: RanJob) -> None:
    reply = ran.server.request("GET", spark_ui.jobs_path(ran.ui_url) or "")
    assert reply.status == 200, reply.text[:500]
    assert "Spark Jobs" in reply.text
    job_link = f"{_proxy_prefix(ran.ui_url)}/jobs/job/?id={ran.job_id}"
    assert job_link in reply.text.replace("&amp;", "&")


def test_without_the_token_the_proxy_serves_nothing_of_the_ui(ran: RanJob) -> None:
    path = spark_ui.job_path(ran.ui_url, ran.job_id) or ""
    # A request that is not a page load (a script's, a websocket's, any POST): 403.
    post = ran.server.request("POST", path, token=None)
    assert post.status == 403, post.status
    websocket = ran.server.request(
        "GET",
        path,
        token=None,
        headers={
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        },
    )
    assert websocket.status == 403, websocket.status
    # A browser's page load without a token or cookie, or with a wrong token, goes to
    # the server's login page (tornado's web.authenticated); the page is not served.
    for token in (None, "wrong-token"):
        page = ran.server.request("GET", path, token=token)
        assert page.status == 302, page.status
        assert page.headers["Location"].startswith(f"{BASE_URL}login?next="), page.headers
        assert "Details for Job" not in page.text and ran.job["name"] not in page.text


def test_a_connect_operations_link_opens_its_sessions_page_of_the_servers_ui(ran: RanJob) -> None:
    # Issue 28 (9): Connect jobs had no link. Their numbers are the board's, so they link
    # to the local server UI's page of the session's operations, which names them.
    ran.kernel.ok("%spark_session create c --remote local", timeout=180)
    ran.kernel.ok("%%spark_session c\nspark.range(0, 1000, 1, 4).selectExpr('sum(id)').collect()")
    group, session = _wait_for_group(ran.server, ran.kernel_id, "c")
    operation = group["jobs"][-1]["operation_id"]
    assert operation and session["operations_page"].startswith("connect/session/?id="), session
    path = spark_ui.page_path(session["ui_url"], session["operations_page"])
    assert path is not None, session
    reply = ran.server.request("GET", path)
    assert reply.status == 200, (path, reply.status, reply.text[:500])
    assert operation in reply.text, reply.text[:2000]
    # That page links the operation's Spark jobs, under the proxy.
    assert f"{_proxy_prefix(session['ui_url'])}/jobs/job/?id=" in reply.text
    # Its UI answers only this server's route (issue 40): the secret the kernel gave
    # the server; nothing on its own port.
    assert session["ui_protected"] is True, session
    port = spark_ui.ui_port(session["ui_url"])
    direct = http.client.HTTPConnection("127.0.0.1", port or 0, timeout=30)
    try:
        direct.request("GET", "/jobs/")
        refused = direct.getresponse()
        assert (refused.status, refused.read()) == (403, b"")
    finally:
        direct.close()

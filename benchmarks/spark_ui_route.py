"""A Spark UI page through the owner's Jupyter server route against the UI's own port.

A real ``jupyter server`` (this project's extension, a JupyterHub-like base URL, a
random token) starts a real kernel; the kernel runs a managed session on ``local[2]``
with the UI on (and so protected by ``jss.UiSecretFilter``) and a few jobs. Then two
pages are loaded ``LOADS`` times each way, interleaved (ABBA), same run:

- the jobs page (``jobs/``) and one REST call (``api/v1/applications/<id>/jobs``);
- through the route ``{base_url}spark-sessions/ui/<port>/`` with the server's token,
  against ``127.0.0.1:<port>`` directly with the UI's secret header (read, as the
  server does, from ``jss-spark-ui-<port>.json`` in the server's runtime dir).

Every load is one new HTTP connection and reads the whole body. No target: the ratio
of the medians is reported.

Run: ``python benchmarks/spark_ui_route.py``; writes results/spark_ui_route.json.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient

from jupyter_spark_sessions.backends.local_master import UI_SECRET_FILE, UI_SECRET_HEADER
from jupyter_spark_sessions.server.spark_ui_route import ROUTE_PREFIX

LOADS, WARM_UP = 50, 5
BASE_URL = "/user/bench/"
RESULTS = Path(__file__).parent / "results" / "spark_ui_route.json"

KERNEL_CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'true', 'spark.ui.port': '0', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
)
#: Ten jobs of session a, so the jobs page and its REST call have rows to render.
JOBS = (
    "%%spark_session a\n"
    "for n in range(10):\n"
    "    spark.range(0, 1000 * (n + 1), 1, 4).selectExpr('sum(id)').collect()\n"
    "import json\n"
    "print(json.dumps({'ui': spark.sparkContext.uiWebUrl, "
    "'app': spark.sparkContext.applicationId}))"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """One GET on a new connection to 127.0.0.1:``port``, the whole body read."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


class Server:
    """``jupyter server`` under ``BASE_URL`` with a random token; kernels' connection
    files (and the UI secret files beside them) in ``runtime_dir``."""

    def __init__(self, base: Path) -> None:
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.runtime_dir = base / "runtime"
        (base / "root").mkdir()
        profile = base / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        (profile / "ipython_config.py").write_text(KERNEL_CONFIG)
        env = dict(
            os.environ,
            IPYTHONDIR=str(base / "ipython"),
            JUPYTER_RUNTIME_DIR=str(self.runtime_dir),
            PYSPARK_PYTHON=sys.executable,
        )
        command = [
            *(sys.executable, "-m", "jupyter", "server", "--no-browser"),
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            f"--ServerApp.base_url={BASE_URL}",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={base / 'root'}",
            *(["--allow-root"] if os.getuid() == 0 else []),
        ]
        self.log = open(base / "jupyter-server.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 90
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyter server did not start: see {self.log.name}")
            time.sleep(0.5)

    def _answers(self) -> bool:
        try:
            return self.get("api/status")[0] == 200
        except OSError:
            return False

    def get(self, path: str) -> tuple[int, bytes]:
        return get(self.port, BASE_URL + path, {"Authorization": f"token {self.token}"})

    def api(self, method: str, path: str) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            body = json.dumps({"name": "python3"}) if method == "POST" else None
            headers = {"Authorization": f"token {self.token}"}
            connection.request(method, BASE_URL + path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            assert response.status in (200, 201, 204), (response.status, data[:300])
            return json.loads(data) if data else None
        finally:
            connection.close()

    def stop(self) -> None:
        try:
            for kernel in self.api("GET", "api/kernels"):
                self.api("DELETE", f"api/kernels/{kernel['id']}")
        finally:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.log.close()


def run_cell(client: BlockingKernelClient, code: str) -> str:
    """Run ``code`` in the kernel; what it printed. RuntimeError if it failed."""
    printed: list[str] = []

    def hook(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])

    reply = client.execute_interactive(code, timeout=300, output_hook=hook)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {reply['content']}")
    return "".join(printed)


def measure(server: Server, ui_port: int, secret: str, application: str) -> dict[str, Any]:
    """Median milliseconds per page and way, and each page's route / direct ratio."""
    pages = {
        "jobs_page": ("jobs/", "Spark Jobs"),
        "rest_jobs": (f"api/v1/applications/{application}/jobs", '"jobId"'),
    }
    route = f"{ROUTE_PREFIX}/{ui_port}/"

    def load(way: str, path: str, marker: str) -> float:
        started = time.perf_counter()
        if way == "route":
            status, body = server.get(route + path)
        else:
            status, body = get(ui_port, "/" + path, {UI_SECRET_HEADER: secret})
        elapsed = (time.perf_counter() - started) * 1000
        assert status == 200 and marker.encode() in body, (way, path, status, body[:300])
        return elapsed

    # Both ways serve the same application's jobs (the REST reply is byte for byte the
    # same JSON); without the secret the port refuses.
    rest = pages["rest_jobs"][0]
    assert json.loads(server.get(route + rest)[1]) == json.loads(
        get(ui_port, "/" + rest, {UI_SECRET_HEADER: secret})[1]
    )
    assert get(ui_port, "/jobs/", {})[0] == 403
    ms: dict[str, dict[str, list[float]]] = {}
    for page, (path, marker) in pages.items():
        for _ in range(WARM_UP):
            load("route", path, marker)
            load("direct", path, marker)
        ms[page] = {"route": [], "direct": []}
        for i in range(LOADS):
            for way in ("route", "direct") if i % 2 == 0 else ("direct", "route"):
                ms[page][way].append(load(way, path, marker))
    figures: dict[str, Any] = {}
    for page, ways in ms.items():
        route_ms, direct_ms = statistics.median(ways["route"]), statistics.median(ways["direct"])
        figures[page] = {
            "path": pages[page][0].replace(application, "<id>"),
            "route_ms_median": route_ms,
            "direct_ms_median": direct_ms,
            "ratio": route_ms / direct_ms,
            "added_ms_median": route_ms - direct_ms,
            "route_ms": ways["route"],
            "direct_ms": ways["direct"],
        }
    return figures


def main() -> None:
    load_before = os.getloadavg()
    server = Server(Path(tempfile.mkdtemp(prefix="jss-bench-ui-route-")))
    client: BlockingKernelClient | None = None
    try:
        kernel_id = server.api("POST", "api/kernels")["id"]
        connection_file = server.runtime_dir / f"kernel-{kernel_id}.json"
        deadline = time.monotonic() + 60
        while not connection_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        client = BlockingKernelClient(connection_file=str(connection_file))
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=120)
        run_cell(client, "%load_ext jupyter_spark_sessions\n%spark_session create a")
        context = json.loads(run_cell(client, JOBS).strip().splitlines()[-1])
        ui_port = int(context["ui"].rsplit(":", 1)[1].strip("/"))
        record = json.loads((server.runtime_dir / UI_SECRET_FILE.format(port=ui_port)).read_text())
        figures = measure(server, ui_port, record["secret"], context["app"])
    finally:
        if client is not None:
            client.stop_channels()
        server.stop()
    result = {
        "benchmark": "spark_ui_route",
        "loads": LOADS,
        "warm_up_loads": WARM_UP,
        "base_url": BASE_URL,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "pages": figures,
        "load_average_1m": {"before": load_before[0], "after": os.getloadavg()[0]},
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    summary = {
        page: {k: v for k, v in f.items() if not k.endswith("_ms")} for page, f in figures.items()
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()

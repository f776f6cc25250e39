"""The Spark UI of a context this project starts answers only its owner's Jupyter
server (issue 40), through real servers and a real kernel: the kernel's UI refuses a
request without its secret (direct, as another OS user, through another Jupyter
server's jupyter-server-proxy), REST API included; the owner's route
``{base_url}spark-sessions/ui/<port>/`` serves every tab's page and the REST call its
scripts make; and the driver's RPC needs Spark's secret (``spark.authenticate``)."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import OTHER_USER
from e2e.waiting import wait_until
from test_spark_ui_proxy import BASE_URL, JupyterServer, Reply, _page_urls, _wait_for_group

from jupyter_spark_sessions.backends.local_master import UI_SECRET_FILE, UI_SECRET_HEADER
from jupyter_spark_sessions.magics import spark_ui
from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

CURL_AS_OTHER = ("runuser", "-u", OTHER_USER, "--", "curl", "-s", "-o", "-", "-w", "\n%{http_code}")
CONTEXT = "__import__('pyspark').SparkContext._active_spark_context"

#: Each tab's page, and the marker of its content.
TABS = {
    "jobs/": "Spark Jobs",
    "stages/": "Stages for All Jobs",
    "storage/": "Storage",
    "environment/": "Environment",
    "executors/": "Executors",
    "SQL/": "SQL",
}


@dataclass
class Owned:
    server: JupyterServer  # the owner's
    other: JupyterServer  # another server (another user's, as far as the kernel knows)
    kernel: Kernel
    kernel_id: str
    ui_url: str
    job: dict[str, Any]

    @property
    def port(self) -> int:
        port = spark_ui.ui_port(self.ui_url)
        assert port is not None
        return port

    def route(self, path: str) -> str:
        return spark_ui.join_base_url(BASE_URL, f"{spark_ui.PROXY_ROUTE}/{self.port}/{path}")

    def owner_get(self, path: str) -> Reply:
        return self.server.request("GET", self.route(path))


@pytest.fixture(scope="module")
def owned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Owned]:
    server = JupyterServer(tmp_path_factory.mktemp("spark-ui-owner"))
    other: JupyterServer | None = None
    kernel: Kernel | None = None
    try:
        # Another user's server, as a hub runs it under that user's prefix.
        other = JupyterServer(tmp_path_factory.mktemp("spark-ui-other"), base_url="/user/ben/")
        kernel_id = server.api("POST", "api/kernels", {"name": "python3"})["id"]
        connection_file = server.runtime_dir / f"kernel-{kernel_id}.json"
        wait_until(connection_file.exists, 60, 0.1)
        kernel = Kernel.attach(str(connection_file))
        kernel.ok("%load_ext jupyter_spark_sessions\n%spark_session create a")
        kernel.ok(
            "%%spark_session a\n"
            "spark.range(0, 1000, 1, 4).selectExpr('sum(id) AS jss_total').collect()\n"
            "spark.range(10).cache().count()"
        )
        group, session = _wait_for_group(server, kernel_id)
        yield Owned(server, other, kernel, kernel_id, session["ui_url"], group["jobs"][-1])
    finally:
        if kernel is not None:
            kernel.close()
        server.stop()
        if other is not None:
            other.stop()


def direct(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def app_id(owned: Owned) -> str:
    reply = owned.owner_get("api/v1/applications")
    assert reply.status == 200, (reply.status, reply.text[:300])
    apps = json.loads(reply.body)
    return str(apps[0]["id"])


def test_the_ui_refuses_a_direct_request_without_the_secret(owned: Owned) -> None:
    for path in ("/jobs/", "/api/v1/applications", "/environment/", "/static/utils.js", "/"):
        status, body = direct(owned.port, path)
        assert status == 403 and body == b"", (path, status, body[:200])
    wrong = direct(owned.port, "/jobs/", {UI_SECRET_HEADER: "not-the-secret"})
    assert wrong == (403, b"")


def test_another_os_user_gets_nothing_from_the_ui(owned: Owned, other_user: str) -> None:
    assert other_user == OTHER_USER and shutil.which("curl"), "curl acts as the other user"
    for path in ("jobs/", "api/v1/applications"):
        done = subprocess.run(
            [*CURL_AS_OTHER, f"http://127.0.0.1:{owned.port}/{path}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        body, _, code = done.stdout.rpartition("\n")
        assert code == "403" and body == "", (path, done.stdout[:300], done.stderr)


def test_another_jupyter_servers_proxy_gets_no_job_data(owned: Owned) -> None:
    for path in ("jobs/", f"jobs/job/?id={owned.job['id']}", "api/v1/applications"):
        reply = owned.other.request("GET", f"proxy/{owned.port}/{path}")
        assert reply.status == 403, (path, reply.status, reply.text[:300])
        assert "Spark Jobs" not in reply.text and "jss_total" not in reply.text
    # Nor through its own spark-sessions route: it holds no secret of this kernel.
    reply = owned.other.request("GET", f"{spark_ui.PROXY_ROUTE}/{owned.port}/jobs/")
    assert reply.status == 403, (reply.status, reply.text[:300])


def test_the_route_needs_the_servers_login(owned: Owned) -> None:
    page = owned.server.request("GET", owned.route("jobs/"), token=None)
    assert page.status == 302 and "/login?next=" in page.headers["Location"], page.status
    api = owned.server.request(
        "GET", owned.route("api/v1/applications"), token=None, headers={"Upgrade": "websocket"}
    )
    assert api.status == 403


def test_every_tab_loads_through_the_owners_route(owned: Owned) -> None:
    prefix = spark_ui.join_base_url(BASE_URL, f"{spark_ui.PROXY_ROUTE}/{owned.port}")
    for path, marker in TABS.items():
        reply = owned.owner_get(path)
        assert reply.status == 200, (path, reply.status, reply.text[:300])
        assert marker in reply.text, path
        assert f"setUIRoot('{prefix}')" in reply.text, path
        outside = sorted(u for u in _page_urls(reply.text) if not u.startswith(prefix + "/"))
        assert not outside, (path, outside)
    # The job, stage and pool pages too.
    job = owned.owner_get(f"jobs/job/?id={owned.job['id']}")
    assert job.status == 200 and f"Details for Job {owned.job['id']}" in job.text
    stage = owned.owner_get(f"stages/stage/?id={owned.job['stage_ids'][0]}&attempt=0")
    assert stage.status == 200, stage.text[:300]
    pool = owned.owner_get("stages/pool/?poolname=a")
    assert pool.status == 200 and "Fair Scheduler Pool: a" in pool.text, pool.text[:300]
    root = owned.owner_get("")
    assert root.status == 302 and root.headers["Location"] == "jobs/", root.headers


def test_the_tabs_scripts_find_the_real_application_id(owned: Owned) -> None:
    # Spark's scripts take the segment after "proxy" (or "history") for the application
    # id; the route has neither, so they ask /api/v1/applications (issue 40, item 2).
    words = owned.route("environment/").split("/")
    assert "proxy" not in words and "history" not in words
    utils = owned.owner_get("static/utils.js")
    assert utils.status == 200 and 'words.indexOf("proxy")' in utils.text
    application = app_id(owned)
    assert application.startswith("local-"), application
    base = f"api/v1/applications/{application}"
    environment = owned.owner_get(f"{base}/environment")
    assert environment.status == 200, environment.text[:300]
    properties = dict(json.loads(environment.body)["sparkProperties"])
    # The filter's secret is redacted in the Environment tab.
    secret_keys = [k for k in properties if k.startswith("spark.jss.")]
    assert secret_keys and all(properties[k] == "*********(redacted)" for k in secret_keys)
    executors = owned.owner_get(f"{base}/allexecutors")
    assert executors.status == 200 and json.loads(executors.body)[0]["id"] == "driver"
    sql = owned.owner_get(f"{base}/sql/sqlTable?draw=1&start=0&length=20")
    assert sql.status == 200, (sql.status, sql.text[:300])
    executions = json.loads(sql.body).get("recordsTotal", 0)
    assert "jss_total" in sql.text or executions > 0, sql.text[:300]
    assert owned.owner_get(f"{base}/sql").status == 200
    assert owned.owner_get(f"{base}/jobs").status == 200


def test_the_secret_is_private_to_the_kernel_and_its_server(owned: Owned) -> None:
    path = owned.server.runtime_dir / UI_SECRET_FILE.format(port=owned.port)
    info = path.lstat()
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    record = json.loads(path.read_text())
    assert record["port"] == owned.port
    assert record["connection_file"] == f"kernel-{owned.kernel_id}.json"
    # Not on the JVM's command line, which every local user can read.
    pid = owned.kernel.value(
        "__import__('jupyter_spark_sessions.backends.driver', fromlist=['d']).gateway_process().pid"
    )
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    assert record["secret"] not in cmdline
    assert "jss.UiSecretFilter" in cmdline or "jss-driver.jar" in cmdline
    # What the filter wants.
    status, body = direct(owned.port, "/jobs/", {UI_SECRET_HEADER: record["secret"]})
    assert status == 200 and b"Spark Jobs" in body


def test_spark_authenticate_is_on_for_the_local_context(owned: Owned) -> None:
    assert owned.kernel.value(f"{CONTEXT}.getConf().get('spark.authenticate')") == "true"
    assert urlsplit(owned.ui_url).hostname == "127.0.0.1"


#: A Spark RPC client of the kernel's own JVM asking the driver for one of its
#: endpoints: without authentication (as another local user's client, which has no
#: secret), then with it. In-process, an authenticating client finds the context's
#: secret itself (local mode keeps it in the JVM's UserGroupInformation), so it is the
#: control: the endpoint exists, and the refusal is the secret's.
RPC_PROBE = """
def _jss_rpc_probe(authenticate):
    sc = __import__('pyspark').SparkContext._active_spark_context
    jvm, conf = sc._jvm, sc._jvm.org.apache.spark.SparkConf(False)
    conf.set('spark.authenticate', authenticate).set('spark.rpc.askTimeout', '10s')
    manager_class = jvm.org.apache.spark.SecurityManager
    secret_file_conf = getattr(manager_class, '$lessinit$greater$default$3')()
    manager = manager_class(conf, jvm.scala.Option.empty(), secret_file_conf)
    env = jvm.org.apache.spark.rpc.RpcEnv.create('jss-probe', '127.0.0.1', 0, conf, manager, True)
    driver = sc.getConf().get('spark.driver.host') + ':' + sc.getConf().get('spark.driver.port')
    try:
        env.setupEndpointRefByURI('spark://HeartbeatReceiver@' + driver)
        return 'connected'
    except Exception as error:
        return 'refused: ' + ' | '.join(l for l in str(error).splitlines() if 'Exception:' in l)
    finally:
        env.shutdown()
"""


def test_the_drivers_rpc_refuses_a_client_without_the_secret(owned: Owned) -> None:
    owned.kernel.ok(RPC_PROBE)
    refused = owned.kernel.value("_jss_rpc_probe('false')")
    assert refused.startswith("refused: ") and "SaslMessage" in refused, refused
    assert owned.kernel.value("_jss_rpc_probe('true')") == "connected"


def test_info_says_the_ui_answers_only_this_server(owned: Owned) -> None:
    out = owned.kernel.ok("%spark_session info a").stdout
    assert f"ui access     {spark_ui.PROTECTED_NOTE}" in out.splitlines(), out

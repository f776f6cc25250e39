"""Every tab of Spark's UI, opened in a real Chromium through the Jupyter server's route
``{base_url}spark-sessions/ui/<port>/`` under a JupyterHub-like base URL (issue 40,
item 2): a real JupyterLab server at ``/user/ana/`` starts a real kernel whose Spark
UI is on (and protected by its secret); a session runs a DataFrame job with a shuffle
and caches a DataFrame. Each page must show what Spark's page scripts fill in from the
REST API (the Environment, Executors and SQL tabs spun for ever when the scripts asked
the wrong URL), with no request failing and none leaving ``/user/ana/``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernel_driver import Kernel

from .conftest import SPARK_UI_KERNEL_CONFIG
from .lab import LabServer, browser_page, save_screenshot
from .waiting import running, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.spark]

#: A JupyterHub single-user server's base URL (no trailing slash).
PREFIX = "/user/ana"
RELAY = "/jupyter-spark-sessions/api/kernels/{}/requests"
#: How long a page may take to show its data (the UI's first REST call starts Jersey).
RENDER_MS = 30_000

#: Session a's cell: a DataFrame job with a shuffle (SQL executions, a two-stage job,
#: tasks in pool a) and a cached DataFrame (the Storage tab).
CELL = (
    "%%spark_session a\n"
    "counts = spark.range(0, 1000, 1, 4).selectExpr('id % 7 AS jss_key').groupBy('jss_key')\n"
    "assert len(counts.count().collect()) == 7\n"
    "assert spark.range(0, 123, 1, 2).cache().count() == 123"
)

#: Spark's own page scripts break its own Content-Security-Policy: spark-dag-viz.js
#: sets an ``onclick`` attribute on the DAG's stage links (the same on the UI's port).
SPARKS_OWN_CSP_ERROR = "Executing inline event handler violates"


class HubLikeLab(LabServer):
    """``jupyter lab`` under ``--ServerApp.base_url=/user/ana/``: ``url`` (what
    ``api``, ``stop`` and the tests build on) includes the prefix."""

    def __init__(self, base: Path) -> None:
        # LabServer keeps its log and IPython profile beside the root: all under base.
        (base / "root").mkdir()
        runtime = base / "runtime"
        self.runtime_dir = runtime  # the kernels' connection files
        super().__init__(
            base / "root",
            # What a hub's single-user server passes to its kernels (``info`` reads it).
            extra_env={"JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTERHUB_SERVICE_PREFIX": PREFIX},
            kernel_config=SPARK_UI_KERNEL_CONFIG,
            extra_args=(f"--ServerApp.base_url={PREFIX}/",),
        )

    @property
    def url(self) -> str:
        return self.origin + PREFIX

    @url.setter
    def url(self, origin: str) -> None:  # LabServer sets its origin
        self.origin = origin


@dataclass
class SparkUi:
    lab: HubLikeLab
    route: str  # the UI under the server, as `%spark_session info a` prints it
    application_id: str
    job: dict[str, Any]  # the board's job with a shuffle (two stages)
    stage_id: int  # a stage that ran its tasks


@dataclass
class Traffic:
    """What the page asked for and what went wrong, since ``clear``."""

    requests: list[str] = field(default_factory=list)
    responses: list[tuple[int, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # uncaught exceptions, console errors

    def clear(self) -> None:
        for record in (self.requests, self.responses, self.failed, self.errors):
            record.clear()

    def console(self, message: Any) -> None:
        if message.type == "error" and SPARKS_OWN_CSP_ERROR not in message.text:
            self.errors.append(f"console: {message.text}")

    def check(self, lab: HubLikeLab) -> None:
        """Every request stayed under the prefix and none failed; no script error."""
        outside = [u for u in self.requests if not u.startswith(lab.url + "/")]
        assert not outside, f"requests outside {lab.url}/: {outside}"
        bad = [(status, url) for status, url in self.responses if status >= 400]
        assert not bad and not self.failed, (bad, self.failed)
        assert not self.errors, self.errors

    def answered(self, path_pattern: str) -> bool:
        """Whether a request whose path matches ``path_pattern`` got a 200."""
        return any(s == 200 and re.search(path_pattern, u) for s, u in self.responses)


@pytest.fixture(scope="module")
def spark_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkUi]:
    with running(HubLikeLab(tmp_path_factory.mktemp("hub-lab"))) as lab:
        kernel_id = lab.api("POST", "/api/kernels", {"name": "python3"})["id"]
        connection_file = lab.runtime_dir / f"kernel-{kernel_id}.json"
        assert wait_until(connection_file.exists, 60, 0.1), connection_file
        kernel = Kernel.attach(str(connection_file))
        try:
            kernel.ok("%load_ext jupyter_spark_sessions\n%spark_session create a")
            kernel.ok(CELL)
            info = kernel.ok("%spark_session info a").stdout
            found = re.search(rf"through the Jupyter server: ({PREFIX}/\S+/)jobs/", info)
            assert found, info
            application_id = kernel.value(
                "__import__('pyspark').SparkContext._active_spark_context.applicationId"
            )
            jobs = _finished_jobs(lab, kernel_id)
            yield SparkUi(
                lab,
                found[1],
                application_id,
                max(jobs, key=lambda job: len(job["stage_ids"])),
                jobs[0]["stage_ids"][0],  # the group's first job skips nothing
            )
        finally:
            kernel.close()


def _finished_jobs(lab: HubLikeLab, kernel_id: str) -> list[dict[str, Any]]:
    """The jobs of session a's finished group, from the board (the server's relay)."""
    deadline = time.monotonic() + 60
    while True:
        reply = lab.api("POST", RELAY.format(kernel_id), {"version": 1, "action": "list"})
        done = [g for g in reply["board"]["groups"] if g["session"] == "a" and g["jobs"]]
        if done and done[-1]["state"] == "succeeded":
            jobs: list[dict[str, Any]] = done[-1]["jobs"]
            return jobs
        assert time.monotonic() < deadline, reply["board"]
        time.sleep(0.3)


@pytest.fixture(scope="module")
def traffic() -> Traffic:
    return Traffic()


@pytest.fixture(scope="module")
def page(spark_ui: SparkUi, traffic: Traffic) -> Iterator[Any]:
    with browser_page(spark_ui.lab) as page:
        page.on("request", lambda request: traffic.requests.append(request.url))
        page.on(
            "response", lambda response: traffic.responses.append((response.status, response.url))
        )
        page.on("requestfailed", lambda request: traffic.failed.append(request.url))
        page.on("pageerror", lambda error: traffic.errors.append(f"page: {error}"))
        page.on("console", traffic.console)
        # Log in once, in JupyterLab: the token in the URL sets the server's cookie.
        page.goto(f"{spark_ui.lab.url}/lab?token={spark_ui.lab.token}")
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        traffic.check(spark_ui.lab)
        page.goto("about:blank")  # leaving Lab aborts its polls: not the UI's requests
        yield page


def open_page(page: Any, traffic: Traffic, spark_ui: SparkUi, path: str) -> None:
    traffic.clear()
    page.goto(f"{spark_ui.lab.origin}{spark_ui.route}{path}")


def finish(page: Any, traffic: Traffic, spark_ui: SparkUi, name: str) -> None:
    """Once the page is quiet: its screenshot, then what its requests met."""
    page.wait_for_load_state("networkidle")
    # Off the link just clicked: its tooltip (shown on hover and focus) would hide the page.
    page.mouse.move(1000, 70)
    page.evaluate("document.activeElement?.blur()")
    page.locator(".tooltip").first.wait_for(state="detached", timeout=5_000)  # faded out
    save_screenshot(page, f"spark-ui-{name}.png")
    traffic.check(spark_ui.lab)


def rows(page: Any, table: str, text: str) -> Any:
    """The rows of ``table`` (a CSS selector) that show ``text``."""
    return page.locator(f"{table} tbody tr").filter(has_text=text)


def test_the_route_is_under_the_hub_prefix(spark_ui: SparkUi) -> None:
    assert spark_ui.route.startswith(f"{PREFIX}/spark-sessions/ui/"), spark_ui.route
    assert spark_ui.application_id.startswith("local-"), spark_ui.application_id


def test_jobs_tab(page: Any, traffic: Traffic, spark_ui: SparkUi) -> None:
    open_page(page, traffic, spark_ui, "jobs/")
    job = rows(page, "#completedJob-table", spark_ui.job["name"]).first
    job.wait_for(timeout=RENDER_MS)
    assert job.locator("a", has_text=spark_ui.job["name"]).count() == 1
    finish(page, traffic, spark_ui, "jobs")


def test_stages_tab(page: Any, traffic: Traffic, spark_ui: SparkUi) -> None:
    open_page(page, traffic, spark_ui, "stages/")
    rows(page, "#completedStage-table", spark_ui.job["name"]).first.wait_for(timeout=RENDER_MS)
    finish(page, traffic, spark_ui, "stages")


def test_storage_tab_lists_the_cached_dataframe(
    page: Any, traffic: Traffic, spark_ui: SparkUi
) -> None:
    open_page(page, traffic, spark_ui, "storage/")
    cached = rows(page, "#storage-by-rdd-table", "Range (0, 123, step=1, splits=2)")
    cached.wait_for(timeout=RENDER_MS)
    assert "100.00%" in cached.inner_text()
    finish(page, traffic, spark_ui, "storage")


def test_environment_tab_renders_the_spark_properties(
    page: Any, traffic: Traffic, spark_ui: SparkUi
) -> None:
    open_page(page, traffic, spark_ui, "environment/")
    page.get_by_role("tab", name="Spark Properties").click()
    app_id = rows(page, "#spark-props-table", "spark.app.id")
    app_id.wait_for(timeout=RENDER_MS)
    assert app_id.locator("td").nth(1).inner_text() == spark_ui.application_id
    # The script asked the application's own id, under the route.
    assert traffic.answered(rf"/api/v1/applications/{spark_ui.application_id}/environment$")
    finish(page, traffic, spark_ui, "environment")


def test_executors_tab_renders_the_driver(page: Any, traffic: Traffic, spark_ui: SparkUi) -> None:
    open_page(page, traffic, spark_ui, "executors/")
    driver = rows(page, "#active-executors-table", "driver")
    driver.wait_for(timeout=RENDER_MS)
    assert "Active" in driver.inner_text()
    assert traffic.answered(rf"/api/v1/applications/{spark_ui.application_id}/allexecutors$")
    finish(page, traffic, spark_ui, "executors")


def test_sql_tab_lists_the_executions_and_opens_one(
    page: Any, traffic: Traffic, spark_ui: SparkUi
) -> None:
    open_page(page, traffic, spark_ui, "SQL/")
    # Listed by the board's names for its group (jss.CellScope's job description).
    execution = rows(page, "#sql-table", " · session a · In [").first
    execution.wait_for(timeout=RENDER_MS)
    assert "COMPLETED" in execution.inner_text()
    assert traffic.answered(rf"/api/v1/applications/{spark_ui.application_id}/sql/sqlTable\?")
    finish(page, traffic, spark_ui, "sql")
    # Its page (a link the script made): the plan drawn by spark-sql-viz.js.
    traffic.clear()
    execution.locator("td").first.locator("a").click()
    plan = page.locator("#plan-viz-graph svg g.node").filter(has_text="HashAggregate").first
    plan.wait_for(timeout=RENDER_MS)
    assert page.url.startswith(f"{spark_ui.lab.origin}{spark_ui.route}SQL/execution/?id=")
    finish(page, traffic, spark_ui, "sql-execution")


def test_job_page_draws_its_dag_and_links_its_pool(
    page: Any, traffic: Traffic, spark_ui: SparkUi
) -> None:
    job = spark_ui.job
    open_page(page, traffic, spark_ui, f"jobs/job/?id={job['id']}")
    page.get_by_text(f"Details for Job {job['id']}").wait_for(timeout=RENDER_MS)
    page.get_by_text("DAG Visualization").click()
    stages = page.locator("#dag-viz-graph svg g.cluster[id^='graph_stage_']")
    stages.first.wait_for(timeout=RENDER_MS)
    drawn = {int(s.rsplit("_", 1)[1]) for s in stages.evaluate_all("gs => gs.map(g => g.id)")}
    assert drawn == set(job["stage_ids"]), (drawn, job["stage_ids"])
    finish(page, traffic, spark_ui, "job")
    # The stage ran in session a's pool: its link (Jetty adds the slash, a 301).
    traffic.clear()
    stage = rows(page, "#completedStage-table", job["name"]).first
    stage.get_by_role("link", name="a", exact=True).click()
    page.get_by_text("Fair Scheduler Pool: a").wait_for(timeout=RENDER_MS)
    assert page.url == f"{spark_ui.lab.origin}{spark_ui.route}stages/pool/?poolname=a"
    pool = page.locator("table tbody tr").filter(has=page.get_by_role("link", name="a", exact=True))
    assert pool.locator("td").nth(2).inner_text() == "1"  # its weight (`info`: "weight 1")
    finish(page, traffic, spark_ui, "pool")


def test_stage_page_renders_its_tasks(page: Any, traffic: Traffic, spark_ui: SparkUi) -> None:
    open_page(page, traffic, spark_ui, f"stages/stage/?id={spark_ui.stage_id}&attempt=0")
    tasks = rows(page, "#active-tasks-table", "SUCCESS")
    tasks.first.wait_for(timeout=RENDER_MS)
    assert tasks.count() == 4  # spark.range(..., 4): four partitions
    assert traffic.answered(rf"/stages/{spark_ui.stage_id}/0/taskTable\?")
    # The summary (drawn by stagepage.js too) at the top, the task table below it.
    page.get_by_text("Summary Metrics for").evaluate("heading => heading.scrollIntoView()")
    finish(page, traffic, spark_ui, "stage")

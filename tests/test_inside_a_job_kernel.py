"""Inside a job, through real kernels on local[2] and local-cluster[2,1,1024] (separate
executor processes): the in-cell view's stage rows, slot chart and diagnosis of a job
with one planted skewed partition, of a one-partition job beside free slots, of a
healthy job of the same size (no line); the rows' task counts equal Spark's own REST
API's; the saved output keeps the static picture."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import start_extension_kernel

from jupyter_spark_sessions.cells.progress import MIME_TYPE
from kernel_driver import CellResult, Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

# A second is enough to be "long" here, so that the jobs stay short.
# A sort's buffer goes to disk after 5,000 rows (Spark's own knob for what memory
# pressure does; a sort past a real executor's memory would take minutes here).
CONFIG = (
    "c.SparkSessionsConfig.default_master = {master!r}\n"
    "c.SparkSessionsConfig.context_conf = {{'spark.ui.enabled': 'true', "
    "'spark.ui.showConsoleProgress': 'false', "
    "'spark.shuffle.spill.numElementsForceSpillThreshold': '5000'}}\n"
    "c.SparkSessionsConfig.diagnosis_min_seconds = 1.0\n"
)

# 16 partitions of one record each, but partition 0 has 50: one partition 50x the others.
SKEWED = """import time
def _slow(x):
    time.sleep(0.05)
    return x
sc = spark.sparkContext
sc.parallelize(range(16), 16).flatMap(lambda p: [p] * (50 if p == 0 else 1)).map(_slow).count()"""
# The same 16 partitions, each as long as the others.
HEALTHY = """sc.parallelize(range(16), 16).flatMap(lambda p: [p] * 4).map(_slow).count()"""
# One partition on a context of 2 task slots.
ONE_PARTITION = """sc.parallelize(range(30), 1).map(_slow).count()"""


@pytest.fixture(scope="module", params=["local[2]", "local-cluster[2,1,1024]"])
def kernel(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernel]:
    kernel = start_extension_kernel(tmp_path_factory, CONFIG.format(master=request.param))
    kernel.ok("%spark_session create a\n%spark_session use a")
    # Executors and their Python workers up before the timed jobs (each slot's first
    # task starting a worker is a wave of slow tasks, not skew: test_diagnosis).
    kernel.ok("spark.sparkContext.parallelize(range(8), 8).map(lambda x: x).count()")
    yield kernel
    kernel.shutdown()


def final_groups(result: CellResult) -> list[dict[str, Any]]:
    """The groups of the cell's last in-cell view (its summary)."""
    shown = [c["data"] for _, c in result.displays if MIME_TYPE in c["data"]]
    assert shown, "no in-cell view"
    last = shown[-1][MIME_TYPE]
    assert last["final"], last
    return list(last["groups"])


def test_a_skewed_partition_gets_the_skew_line_naming_its_stage_and_line(kernel: Kernel) -> None:
    result = kernel.ok(SKEWED)
    (group,) = final_groups(result)
    inside = group["inside"]
    assert inside is not None
    (row,) = inside["stages"]
    assert (row["total"], row["done"], row["status"]) == (16, 16, "complete")
    assert row["max_task_seconds"] >= 2.0 and row["median_task_seconds"] < 0.5, row
    (finding,) = inside["findings"]
    assert finding.startswith(f"stage {row['id']} ({row['name']}): its slowest task of 16 ran ")
    assert "In [" in row["name"], row["name"]  # the cell's line, as the group is named
    assert "skewed keys" in finding
    # The chart: this group's running tasks against the slots, with its stage's start.
    chart = inside["chart"]
    assert sum(chart["slots"]) == 2, chart
    assert [stage for _, stage in chart["stage_marks"]] == [row["id"]]
    assert max(max(counts) for _, counts in chart["samples"]) >= 1
    # What a saved notebook keeps: the rows, the chart and the line, without the extension.
    bundle = [c["data"] for _, c in result.displays if MIME_TYPE in c["data"]][-1]
    assert "<svg" in bundle["text/html"] and "skewed keys" in bundle["text/html"]
    assert finding in bundle["text/plain"] and f"stage {row['id']} " in bundle["text/plain"]


def test_a_healthy_job_of_the_same_size_gets_no_line(kernel: Kernel) -> None:
    kernel.ok(SKEWED.split("\nsc.parallelize")[0])
    (group,) = final_groups(kernel.ok(HEALTHY))
    assert group["inside"]["findings"] == [], group["inside"]
    assert group["inside"]["stages"][0]["total"] == 16


def test_one_partition_beside_free_slots_gets_the_partitions_line(kernel: Kernel) -> None:
    kernel.ok(SKEWED.split("\nsc.parallelize")[0])
    (group,) = final_groups(kernel.ok(ONE_PARTITION))
    (finding,) = group["inside"]["findings"]
    assert ": 1 task for 2 task slots over " in finding and "too few partitions" in finding


# 300,000 rows sorted in 2 shuffle partitions: each sort task holds 150,000 of them.
SPILLING_SORT = """spark.conf.set("spark.sql.shuffle.partitions", "2")
(spark.range(0, 300000, 1, 2).selectExpr("id % 1000 AS k", "id AS v").sort("k", "v")
    .write.format("noop").mode("overwrite").save())"""


def test_a_sort_that_spills_gets_the_spill_line_naming_its_stage(kernel: Kernel) -> None:
    try:
        (group,) = final_groups(kernel.ok(SPILLING_SORT))
    finally:
        kernel.ok('spark.conf.unset("spark.sql.shuffle.partitions")')
    inside = group["inside"]
    spilled = [r for r in inside["stages"] if r["disk_spilled_bytes"] > 0]
    assert spilled, inside["stages"]
    lines = [f for f in inside["findings"] if " to disk " in f]
    assert [line.split(":")[0] for line in lines] == [
        f"stage {r['id']} ({r['name']})" for r in spilled
    ], inside["findings"]
    assert all("more shuffle partitions or more executor memory" in line for line in lines)
    assert "In [" in spilled[0]["name"], spilled[0]


def test_the_rows_task_counts_equal_sparks_rest_apis(kernel: Kernel) -> None:
    kernel.ok(SKEWED.split("\nsc.parallelize")[0])
    result = kernel.ok(
        "spark.range(0, 4000, 1, 8).selectExpr('id % 3 as k').groupBy('k').count().collect()"
    )
    (group,) = final_groups(result)
    rows = group["inside"]["stages"]
    assert rows, group
    rest = kernel.value(REST_STAGES.replace("IDS", repr([r["id"] for r in rows])))
    for row in rows:
        spark = rest[str(row["id"])]
        assert (row["total"], row["done"], row["failed"], row["killed"]) == (
            spark["numTasks"],
            spark["numCompleteTasks"],
            spark["numFailedTasks"],
            spark["numKilledTasks"],
        ), (row, spark)
    # AQE runs the shuffle's map stage as a job of its own: the next job skips it.
    assert group["inside"]["skipped_stages"] >= 1


# Spark's REST API of the kernel's own UI, asked as its Jupyter server does (the secret).
REST_STAGES = """(lambda: (lambda sc, json, urllib: (lambda base, secret: {
    str(i): json.load(urllib.urlopen(urllib.Request(
        f"{base}/api/v1/applications/{sc.applicationId}/stages/{i}",
        headers={"X-Jss-Ui-Secret": secret})))[0]
    for i in IDS})(sc.uiWebUrl, sc.getConf().get("spark.jss.UiSecretFilter.param.secret")))(
    spark.sparkContext, __import__("json"), __import__("urllib.request").request))()"""


def test_the_saved_output_is_json_and_bounded(kernel: Kernel) -> None:
    kernel.ok(SKEWED.split("\nsc.parallelize")[0])
    result = kernel.ok(SKEWED)
    bundle = [c["data"] for _, c in result.displays if MIME_TYPE in c["data"]][-1]
    assert len(json.dumps(bundle)) < 64 * 1024


def test_a_threshold_that_is_not_a_number_refuses_the_load_in_one_line(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    ipython_dir = tmp_path_factory.mktemp("ipython")
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(
        "c.SparkSessionsConfig.diagnosis_skew_ratio = 'five'\n"
    )
    kernel = Kernel(env={"IPYTHONDIR": str(ipython_dir)}, cwd=str(tmp_path_factory.mktemp("cwd")))
    try:
        result = kernel.execute("%load_ext jupyter_spark_sessions")
        # IPython prints a UsageError as its one line.
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(
            "UsageError: jupyter_spark_sessions not loaded: a setting is wrong: "
        ), result.stderr
        assert "diagnosis_skew_ratio" in lines[0] and "'five'" in lines[0], lines
        # Nothing of it was set up: its magics are not there.
        missing = kernel.execute("%spark_session list").stderr
        assert "Line magic function `%spark_session` not found" in missing, missing
    finally:
        kernel.shutdown()


# -- Spark Connect: the local server's stages, read from its UI's REST API --------------

CONNECT_CONFIG = (
    "c.SparkSessionsConfig.connect_master = 'local[2]'\n"
    "c.SparkSessionsConfig.connect_conf = {'spark.ui.enabled': 'true'}\n"
    "c.SparkSessionsConfig.diagnosis_min_seconds = 1.0\n"
)

# 16 partitions of one row each; partition 0 made 100 rows: one partition 100x the others,
# 5 s of its task. The server's stages are read at least 1 s apart, further apart under
# load (a read's time / 0.04): with 2.5 s, a loaded CI run read no running task at all.
CONNECT_SKEWED = """from pyspark.sql import functions as F
@F.udf("long")
def _slow(x):
    import time
    time.sleep(0.05)
    return x
rows = F.explode(F.array_repeat("id", F.when(F.col("id") == 0, 100).otherwise(1)))
spark.range(0, 16, 1, 16).select(rows.alias("id")).select(_slow("id")).collect()"""


@pytest.fixture(scope="module")
def connect_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    kernel = start_extension_kernel(tmp_path_factory, CONNECT_CONFIG)
    kernel.ok("%spark_session create --remote local r\n%spark_session use r")
    kernel.ok(CONNECT_SKEWED.replace("== 0, 100", "== 0, 1"))  # the Python workers up
    yield kernel
    kernel.shutdown()


def test_a_connect_sessions_skewed_job_gets_the_skew_line_naming_its_stage_and_line(
    connect_kernel: Kernel,
) -> None:
    result = connect_kernel.ok(CONNECT_SKEWED)
    (group,) = final_groups(result)
    inside = group["inside"]
    assert inside is not None, group
    (row,) = inside["stages"]
    assert (row["total"], row["done"], row["status"]) == (16, 16, "complete"), row
    assert row["max_task_seconds"] >= 2.0 and row["median_task_seconds"] < 0.5, row
    # Named where the cell called it, as a classic stage is (the server's name is its plan).
    assert row["name"].startswith("collect at In [") and "line 8" in row["name"], row
    (finding,) = inside["findings"]
    assert finding.startswith(f"stage {row['id']} ({row['name']}): its slowest task of 16 ran ")
    assert "skewed keys" in finding
    chart = inside["chart"]
    assert chart is not None and sum(chart["slots"]) == 2, chart
    assert max(max(counts) for _, counts in chart["samples"]) >= 1
    # The group reads as the cell's line too, as a classic group does.
    assert "collect()" in group["description"], group["description"]

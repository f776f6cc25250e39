"""Session magics through a real IPython kernel (jupyter_client) on a real PySpark JVM.

One kernel, hence one SparkContext (local[2]), is shared by the whole module.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import jvm_threads

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"
# Spark's job tracker, to observe which jobs carry which tags.
TRACKER = "spark.sparkContext._jsc.sc().statusTracker()"


@pytest.fixture(scope="module")
def sessions(kernel: Kernel) -> Kernel:
    """Sessions a and b created through the magics."""
    kernel.ok("%spark_session create a")
    kernel.ok("%spark_session create b --conf spark.sql.shuffle.partitions=7")
    return kernel


def registry_state(kernel: Kernel) -> dict[str, object]:
    """Names, session directories and the context state, to prove an error changed nothing."""
    return kernel.value(
        f"{{'names': {REGISTRY}.names(), 'dirs': sorted(__import__('os').listdir("
        f"{REGISTRY}.config.resolved_session_root())), 'spark': repr(globals().get('spark'))}}"
    )


def test_create_starts_context_with_kernel_python_and_lists_sessions(sessions: Kernel) -> None:
    import sys

    listing = sessions.ok("%spark_session list").stdout
    header, _, *rows = listing.splitlines()
    assert header.split()[:4] == ["name", "origin", "backend", "master"]
    assert [r.split()[:4] for r in rows] == [
        ["a", "created", "classic", "local[2]"],
        ["b", "created", "classic", "local[2]"],
    ]
    assert sessions.value("__import__('os').environ['PYSPARK_PYTHON']") == sys.executable
    assert sessions.value(f"{REGISTRY}.owns_context") is True


def test_jobs_never_shows_a_state_older_than_its_own_call(sessions: Kernel) -> None:
    """Right after a thread's job ended, ``jobs`` shows its group ended: the magic reads
    Spark before it answers (it showed the group running 4 times in 6)."""
    sessions.ok("%spark_session use a\nfrom pyspark import InheritableThread")
    for _ in range(6):  # the thread's job is the cell's (an InheritableThread)
        count = sessions.ok(
            "_t = InheritableThread(target=lambda: spark.range(0, 4, 1, 2).selectExpr("
            "'sum(id)').collect())\n_t.start()\n_t.join()"
        ).execution_count
        table = sessions.ok("%spark_session jobs a").stdout
        row = next((r for r in table.splitlines() if r.startswith(f"a:{count} ")), "")
        assert row.split()[1:2] == ["succeeded"], (count, table)


def test_info_shows_id_directory_and_running_jobs(sessions: Kernel) -> None:
    out = sessions.ok("%spark_session info a").stdout
    fields = dict(
        line.split(None, 1)
        for line in out.replace("session id", "session_id")
        .replace("running jobs", "running_jobs")
        .splitlines()
    )
    spark_id = sessions.value(f"{REGISTRY}.session('a')._jsparkSession.sessionUUID()")
    assert fields["session_id"] == spark_id
    assert fields["origin"] == "created" and fields["isolated"] == "yes"
    assert fields["running_jobs"] == "0" and fields["state"] == "ready"
    assert sessions.value(f"__import__('os').path.isdir({fields['directory']!r})")


def test_sessions_are_isolated_conf_and_temp_views(sessions: Kernel) -> None:
    sessions.ok(
        "%%spark_session a\n"
        "spark.conf.set('spark.sql.shuffle.partitions', '3')\n"
        "spark.range(2).createOrReplaceTempView('only_in_a')"
    )
    b = sessions.ok(
        "%%spark_session b\n"
        "print(spark.conf.get('spark.sql.shuffle.partitions'))\n"
        "print(spark.catalog.tableExists('only_in_a'))"
    ).stdout.split()
    a = sessions.ok(
        "%%spark_session a\n"
        "print(spark.conf.get('spark.sql.shuffle.partitions'))\n"
        "print(spark.catalog.tableExists('only_in_a'))"
    ).stdout.split()
    assert a == ["3", "True"]
    assert b == ["7", "False"]


def test_created_sessions_have_artifact_isolation_on(sessions: Kernel) -> None:
    state = sessions.value(
        f"[str({REGISTRY}.session(n)._jsparkSession.sessionState().artifactManager().state())"
        " for n in ('a', 'b')]"
    )
    assert all(s.startswith("JobArtifactState(") for s in state)


def test_use_binds_spark_and_tags_the_cells_jobs(sessions: Kernel) -> None:
    sessions.ok("%spark_session use a")
    count = sessions.ok("spark.range(10).count()").execution_count  # In [count]
    jobs = sessions.value(f"list({TRACKER}.getJobIdsForTag('jss:a:{count}'))")
    session_jobs = sessions.value(f"list({TRACKER}.getJobIdsForTag('jss:a'))")
    assert jobs, "the cell's job carries its group tag"
    assert set(jobs) <= set(session_jobs)
    # Tags are removed when the cell ends: a later cell carries only its own.
    shown = sessions.ok("print(sorted(spark.sparkContext.getJobTags()))")
    assert shown.stdout.strip() == str(["jss:a", f"jss:a:{shown.execution_count}"])
    # A bound cell's tags go after its reply, from the kernel's event loop, and before
    # the next cell in any case: a cell bound to no session carries none.
    sessions.ok("_sc = spark.sparkContext")
    sessions.ok("spark = None")  # bound when it started
    unbound = sessions.ok("print(sorted(_sc.getJobTags()))")
    assert unbound.stdout.strip() == "[]"
    sessions.ok("%spark_session use a")


def test_use_inside_a_cell_tags_the_rest_of_that_cell(sessions: Kernel) -> None:
    sessions.ok("spark = None")
    ran = sessions.ok("%spark_session use b\nspark.range(6).count()")
    jobs = sessions.value(f"list({TRACKER}.getJobIdsForTag('jss:b:{ran.execution_count}'))")
    assert jobs, "the job after `use` in the same cell belongs to b's group of that cell"


def test_rdd_jobs_of_a_cell_are_tagged_too(sessions: Kernel) -> None:
    sessions.ok("%spark_session use b")
    count = sessions.ok(
        "spark.sparkContext.parallelize(range(4), 2).map(lambda x: x).count()"
    ).execution_count
    jobs = sessions.value(f"list({TRACKER}.getJobIdsForTag('jss:b:{count}'))")
    assert jobs


def test_cell_magic_binds_for_one_cell_and_restores_even_on_error(sessions: Kernel) -> None:
    sessions.ok("%spark_session use a")
    failed = sessions.execute(
        "%%spark_session b\n"
        "seen = spark.conf.get('spark.sql.shuffle.partitions')\n"
        "raise ValueError('boom')"
    )
    assert failed.status == "error" and failed.error_name == "ValueError"
    assert sessions.value("seen") == "7"
    assert sessions.value(f"spark is {REGISTRY}.session('a')") is True
    # With `spark` unbound before, it is unbound again after.
    sessions.ok("del spark")
    result = sessions.ok("%%spark_session b\nspark.range(3).count()")
    assert result.result_text == "3"
    assert sessions.value("'spark' in globals()") is False


def test_cell_magic_tags_jobs_with_its_own_session(sessions: Kernel) -> None:
    sessions.ok("%spark_session use a")
    count = sessions.ok("%%spark_session b\nspark.range(5).count()").execution_count
    tracker = TRACKER.replace("spark.", f"{REGISTRY}.session('a').", 1)
    assert sessions.value(f"list({tracker}.getJobIdsForTag('jss:b:{count}'))")
    assert sessions.value(f"list({tracker}.getJobIdsForTag('jss:a:{count}'))") == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%spark_session frobnicate", "Unknown subcommand 'frobnicate' (one of create, adopt,"),
        ("%spark_session creat x", "Unknown subcommand 'creat': did you mean `create`?"),
        ("%spark_session add_file a", "the following arguments are required: PATH (usage: "),
        ("%spark_session use nobody", "No session named 'nobody'"),
        ("%spark_session info nobody", "No session named 'nobody'"),
        ("%spark_session stop nobody", "No session named 'nobody'"),
        ("%spark_session create a", "A session named 'a' already exists"),
        ("%spark_session create c --conf novalue", "Bad --conf 'novalue': expected KEY=VALUE"),
        ("%spark_session create c --conf spark.executor.memory=2g", "Spark refused --conf"),
        ("%spark_session create c --conf spark.sql.warehouse.dir=/x", "Spark refused --conf"),
        ("%spark_session create 'bad name'", "Invalid session name 'bad name'"),
        ("%spark_session create x:y", "Invalid session name 'x:y'"),
        ("%spark_session create c --master local[1]", "already runs on local[2]"),
        ("%spark_session adopt c not_defined", "No variable named 'not_defined'"),
        ("%spark_session adopt c some_int", "'some_int' is a builtins.int, not a SparkSession"),
        ("%spark_session adopt c some_session", "already registered as 'a'"),
        ("%spark_session create c --weight 0", "--weight: expected a whole number from 1, not '0'"),
        (
            "%spark_session create c --min-share x",
            "--min-share: expected a whole number from 0, not 'x'",
        ),
        ("%spark_session create c --remote local --weight 2", "a Spark Connect client cannot"),
        ("%spark_session share nobody --weight 2", "No session named 'nobody'"),
        ("%spark_session share a --weight 0", "--weight: expected a whole number from 1, not '0'"),
        (
            "%spark_session create c --conf spark.scheduler.pool=mine --weight 2",
            "--conf spark.scheduler.pool puts it in yours",
        ),
    ],
)
def test_user_mistakes_are_one_line_and_change_nothing(
    sessions: Kernel, line: str, expected: str
) -> None:
    sessions.ok(f"some_int = 3\nsome_session = {REGISTRY}.session('a')")
    before = registry_state(sessions)
    result = sessions.execute(line)
    assert result.status == "error"
    assert expected in result.usage_error, result.stderr
    assert result.stderr.strip().count("\n") == 0, "one line, no traceback"
    assert registry_state(sessions) == before


def test_an_interrupt_stops_a_package_build_at_once_and_leaves_nothing(
    sessions: Kernel, tmp_path: Path
) -> None:
    """An Interrupt during `create --pip` (uv waiting on a package index that never
    answers) ends the cell in one line at once: no session, no cache entry, no uv left."""
    index = socket.create_server(("127.0.0.1", 0))
    asked = threading.Event()
    held: list[socket.socket] = []

    def accept_and_never_answer() -> None:
        connection, _ = index.accept()
        held.append(connection)
        asked.set()

    threading.Thread(target=accept_and_never_answer, daemon=True).start()
    url = f"http://127.0.0.1:{index.getsockname()[1]}/simple"
    envs = tmp_path / "envs"
    sessions.ok(
        f"import os\n{REGISTRY}.config.env_cache_dir = {str(envs)!r}\n"
        f"os.environ['UV_INDEX_URL'] = os.environ['UV_DEFAULT_INDEX'] = {url!r}"
    )
    before = registry_state(sessions)
    # A name of this run's own: the other test runs of `make test` run this test beside it.
    package = f"jss-slow-pkg-{os.getpid()}"
    try:
        building = sessions.client.execute(f"%spark_session create pbuild --pip {package}==1.0")
        assert asked.wait(60), "uv never asked the index"
        assert sessions.manager is not None
        sessions.manager.interrupt_kernel()
        result = sessions.collect(building, timeout=30)
        assert result.usage_error == (
            f"Interrupted: the Python environment for {package}==1.0 was not built; "
            "nothing was made or changed."
        ), (result.error_name, result.error_value, result.stderr)
        assert registry_state(sessions) == before
        assert not [p.name for p in envs.iterdir()], "no entry, no half-built folder"
        uv_left = subprocess.run(["pgrep", "-f", package], capture_output=True)
        assert uv_left.returncode == 1, uv_left.stdout
    finally:
        sessions.ok(
            "os.environ.pop('UV_INDEX_URL', None)\nos.environ.pop('UV_DEFAULT_INDEX', None)"
        )
        for connection in held:
            connection.close()
        index.close()


def test_a_sessions_share_of_the_slots_is_set_at_create_and_changed_for_new_jobs(
    sessions: Kernel,
) -> None:
    sessions.ok("%spark_session create heavy --weight 3 --min-share 1")
    info = sessions.ok("%spark_session info heavy").stdout
    assert "scheduling    FAIR, in its own pool (weight 3, at least 1 slot)" in info
    root = f"{REGISTRY}.session('heavy').sparkContext._jsc.sc().taskScheduler().rootPool()"
    made = f"{root}.getSchedulableByName('heavy (weight 3, min share 1)')"
    assert sessions.value(f"[{made}.weight(), {made}.minShare()]") == [3, 1]
    # What the views show: its share, and the context's slots.
    view = f"{REGISTRY}.describe('heavy')"
    assert sessions.value(f"[{view}.share, {view}.slots]") == ["weight 3, at least 1 slot", 2]
    listing = sessions.ok("%spark_session list").stdout
    heavy_row = next(r for r in listing.splitlines() if r.startswith("heavy"))
    assert "weight 3, at least 1 slot" in heavy_row
    # A new share: a new pool (Spark fixes a pool's shares), for the session's SQL jobs
    # (its settings) and its cells' RDD jobs (the cell's thread); the rest stays.
    out = sessions.ok("%spark_session share heavy --weight 2").stdout
    assert "Session 'heavy' runs its new jobs with weight 2, at least 1 slot;" in out, out
    pool = "heavy (weight 2, min share 1)"
    assert sessions.value(f"{root}.getSchedulableByName('{pool}').weight()") == 2
    assert sessions.value(f"{REGISTRY}.session('heavy').conf.get('spark.scheduler.pool')") == pool
    property_read = "spark.sparkContext.getLocalProperty('spark.scheduler.pool')"
    sessions.ok(f"%%spark_session heavy\n_pool = {property_read}")
    assert sessions.value("_pool") == pool
    assert sessions.ok("%spark_session share heavy").stdout.strip() == (
        "FAIR, in its own pool (weight 2, at least 1 slot)"
    )
    # Made again by its name with other shares: its own pool again, no clash.
    sessions.ok("%spark_session stop heavy")
    sessions.ok("%spark_session create heavy --weight 3 --min-share 1")
    assert "(weight 3, at least 1 slot)" in sessions.ok("%spark_session info heavy").stdout
    sessions.ok("%spark_session stop heavy")


def test_help_is_a_page_of_examples_and_help_gives_a_subcommand_in_full(sessions: Kernel) -> None:
    result = sessions.ok("%spark_session?")
    text = "".join(p.get("data", {}).get("text/plain", "") for p in result.payload)
    for sub in ("create", "adopt", "use", "list", "info", "stop", "restart", "reconnect"):
        assert f"%spark_session {sub} " in text
    assert "::" not in text and "%%spark_session create" not in text
    assert len(text.splitlines()) < 60, text  # a page, not every option of every subcommand
    for sub in ("create", "stop"):
        full = sessions.ok(f"%spark_session help {sub}").stdout
        assert f"usage: %spark_session {sub}" in full
        assert f"Example: %spark_session {sub}" in full


def test_a_bare_magic_prints_a_short_usage_that_points_at_the_help(sessions: Kernel) -> None:
    result = sessions.ok("%spark_session")
    assert result.stdout.startswith("Usage: %spark_session SUBCOMMAND ... (create, adopt,")
    assert "`%spark_session?` shows each with an example" in result.stdout
    assert result.stdout.count("\n") == 1 and not result.stderr


def test_racing_creates_of_one_name_yield_one_session_and_one_error(sessions: Kernel) -> None:
    sessions.ok(
        "import threading\n"
        "from jupyter_spark_sessions import SparkSessionsError\n"
        f"_reg = {REGISTRY}\n"
        "made, errors = [], []\n"
        "_go = threading.Barrier(2)\n"
        "def _create():\n"
        "    _go.wait()\n"
        "    try:\n"
        "        made.append(_reg.create('race'))\n"
        "    except SparkSessionsError as exc:\n"
        "        errors.append(str(exc))\n"
        "_threads = [threading.Thread(target=_create) for _ in range(2)]\n"
        "[t.start() for t in _threads]; [t.join() for t in _threads]"
    )
    assert sessions.value("len(made)") == 1
    assert sessions.value("errors") == ["A session named 'race' already exists."]
    dirs = sessions.value(
        "[d for d in __import__('os').listdir(_reg.config.resolved_session_root())"
        " if d.startswith('race-')]"
    )
    assert len(dirs) == 1
    sessions.ok("_reg.stop('race').wait(60)")


def test_stop_b_while_a_runs_leaves_a_and_the_context_running(sessions: Kernel) -> None:
    """The Beam crash case: stopping one session must not stop the shared context."""
    sessions.ok("%spark_session create victim")
    victim_dir = sessions.value(f"str({REGISTRY}.get('victim').directory)")
    sessions.ok(
        "import time\n"
        "from pyspark import InheritableThread\n"
        "from pyspark.sql.functions import udf\n"
        "@udf('long')\n"
        "def slow(x):\n"
        "    import time; time.sleep(1); return x\n"
        "outcome = {}\n"
        "def run_a():\n"
        "    outcome['sum'] = spark.range(12).repartition(2).select(slow('id').alias('v'))"
        ".groupBy().sum('v').collect()[0][0]\n"
        "%spark_session use a\n"
        "job_a = InheritableThread(target=run_a)\n"
        "job_a.start()\n"
    )
    deadline = time.monotonic() + 60  # a loaded machine takes a while to start the job
    while not sessions.value(f"{REGISTRY}.info('a').running_jobs"):
        assert time.monotonic() < deadline, "A's job never started"
        time.sleep(0.2)
    started = time.monotonic()
    stop = sessions.ok("%spark_session stop victim")
    assert time.monotonic() - started < 5, "stop returns promptly"
    assert "Stopped session 'victim'" in stop.stdout
    sessions.ok("job_a.join(120)")
    assert sessions.value("outcome") == {"sum": 66}
    assert sessions.value("spark.sparkContext._jsc.sc().isStopped()") is False
    assert sessions.ok("spark.range(4).count()").result_text == "4"
    assert sessions.value(f"{REGISTRY}._releases['victim'].wait(60)") is True
    assert sessions.value(f"__import__('os').path.exists({victim_dir!r})") is False


def test_stop_cancels_the_sessions_running_jobs_without_waiting(sessions: Kernel) -> None:
    sessions.ok("%spark_session create doomed")
    sessions.ok(
        "from pyspark import InheritableThread\n"
        "from pyspark.sql.functions import udf\n"
        "@udf('long')\n"
        "def very_slow(x):\n"
        "    import time; time.sleep(60); return x\n"
        "doomed_outcome = {}\n"
        "def run_doomed():\n"
        "    try:\n"
        "        spark.range(2).repartition(2).select(very_slow('id')).collect()\n"
        "        doomed_outcome['result'] = 'finished'\n"
        "    except Exception as exc:\n"
        "        doomed_outcome['result'] = str(exc)\n"
        "%spark_session use doomed\n"
        "doomed_job = InheritableThread(target=run_doomed)\n"
        "doomed_job.start()\n"
    )
    deadline = time.monotonic() + 60
    while sessions.value(f"{REGISTRY}.info('doomed').running_jobs") != 1 or not any(
        state == "running" and "RUNNING" in jobs for state, jobs in doomed_groups(sessions)
    ):
        assert time.monotonic() < deadline, f"doomed's job never showed: {doomed_groups(sessions)}"
        time.sleep(0.2)
    started = time.monotonic()
    out = sessions.ok("%spark_session stop doomed").stdout
    assert time.monotonic() - started < 5
    assert "`spark` was that session and is now unbound" in out
    # Its tasks sleep 60 s: a job that stop waited for would still run after 50.
    sessions.ok("doomed_job.join(50)")
    outcome = sessions.value("doomed_outcome")
    assert "cancelled" in outcome.get("result", "still running").lower(), outcome
    assert sessions.value(f"{REGISTRY}._releases['doomed'].wait(30)") is True
    result = sessions.execute("%spark_session use doomed")
    assert "Session 'doomed' was stopped" in result.usage_error
    # The board shows how the stopped session's group ended, not "cancelling" for ever.
    deadline = time.monotonic() + 30
    while not (shown := doomed_groups(sessions)) or any(
        state not in ("cancelled", "failed") or "RUNNING" in jobs for state, jobs in shown
    ):
        if time.monotonic() > deadline:
            threads = jvm_threads(sessions)  # first: it needs no JVM call
            raise AssertionError(f"doomed's groups: {shown}\n{threads}\n{spark_view(sessions)}")
        time.sleep(0.2)


def spark_view(kernel: Kernel) -> str:
    """What Spark's status store and scheduler say of the board's doomed jobs (for a
    failure's message)."""
    return str(
        kernel.value(
            "(lambda sc, t: {'scheduler active jobs': sc._jsc.sc().dagScheduler().activeJobs()"
            ".size(), 'jobs': [(j.id, str(t.getJobInfo(j.id))) for g in "
            f"{REGISTRY}.board.snapshot().groups if g.session == 'doomed' for j in g.jobs], "
            "'stages': [(i, str(t.getStageInfo(i))) for i in t.getActiveStageIds()]})"
            "(__import__('pyspark').SparkContext._active_spark_context, "
            "__import__('pyspark').SparkContext._active_spark_context.statusTracker())"
        )
    )


def doomed_groups(kernel: Kernel) -> list[tuple[str, list[str]]]:
    """Session doomed's groups with jobs on the board: (state, job statuses)."""
    shown = kernel.value(
        f"[(g.state, [j.status for j in g.jobs]) for g in {REGISTRY}.board.snapshot().groups"
        " if g.session == 'doomed' and g.jobs]"
    )
    return [(state, statuses) for state, statuses in shown]


def test_adopt_isolates_a_fresh_session_and_reports_a_used_one(sessions: Kernel) -> None:
    sessions.ok(
        f"_root = {REGISTRY}.session('a')\n"
        "fresh = _root.newSession()\n"
        "used = _root.newSession()\n"
        "used.range(1).count()"
    )
    assert "not isolated" not in sessions.ok("%spark_session adopt fresh_one fresh").stdout
    out = sessions.ok("%spark_session adopt used_one used").stdout
    assert "not isolated: it ran queries before adoption" in out
    assert sessions.value(f"{REGISTRY}.info('fresh_one').isolated") is True
    assert sessions.value(f"{REGISTRY}.info('used_one').isolated") is False
    sessions.ok("%spark_session stop fresh_one\n%spark_session stop used_one")
    assert sessions.ok("fresh.range(2).count()").result_text == "2", "adopted: never stopped"


def test_running_in_tags_the_threads_jobs_as_one_group_of_the_session(sessions: Kernel) -> None:
    sessions.ok(
        f"with {REGISTRY}.running_in('b', execution_count=9001) as _s:\n"
        "    _inside = sorted(_s.sparkContext.getJobTags())\n"
        "    _s.range(3).count()\n"
        "_after = sorted(_s.sparkContext.getJobTags())"
    )
    assert sessions.value("_inside") == ["jss:b", "jss:b:9001"]
    assert "jss:b:9001" not in sessions.value("_after")
    tracker = TRACKER.replace("spark.", "_s.", 1)
    assert sessions.value(f"list({tracker}.getJobIdsForTag('jss:b:9001'))")

"""Many notebooks, one driver (issue 38), through a real Jupyter server and four real
kernels it starts for four notebooks (CI's size; each fault checks the other notebooks'
next cell and that one server JVM runs): all ``create --remote shared`` and one Spark JVM
(the shared Connect server's) runs for all; their same-name files differ; a's busy pool
does not starve b's small job; the rendezvous files are private and a client without the
token is refused; kill -9 of the first kernel releases its session while the second keeps
working; kill -9 of the keeper leaves the server and the sessions, and a kernel takes the
server over (issue 50), while a server whose keeper and kernels are all gone ends itself;
after a server's death (killed, or a UDF that exhausted its memory) each notebook's next
cell says so in one line, and the notebooks reconnecting at the same moment start one new
server; the Jupyter server's shutdown leaves no Java process. Then the soak (issue 50):
four notebooks for 75 seconds, kernels restarted and shut down, and nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from e2e.waiting import stop_process, wait_until
from shared_driver_processes import kill_recorded_server, server_jvms
from test_inside_a_job_kernel import final_groups
from test_spark_ui_proxy import JupyterServer

from jupyter_spark_sessions.shared_driver.rendezvous import LOCK, RECORD, Rendezvous, ServerRecord
from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

#: Two slots on the shared server, as on the suite's machine.
CONFIG = (
    "c.SparkSessionsConfig.shared_driver_master = 'local[2]'\n"
    "c.SparkSessionsConfig.shared_driver_idle_timeout = 120.0\n"
    "c.SparkSessionsConfig.shared_driver_restart_grace = 2.0\n"
    # A server no keeper looks after ends after 10 s here (60 by default).
    # A heap of 512 MB (1 GB by default): the heap-eating cell's error comes sooner.
    "c.SparkSessionsConfig.shared_driver_conf = {'spark.jss.keeperGraceSeconds': '10',"
    " 'spark.driver.memory': '512m'}\n"
)

SESSION = "__import__('jupyter_spark_sessions').default_registry().session('{}')"

SLEEPY_UDF = """%%spark_session {}
from pyspark.sql.functions import udf
import threading, time

@udf('long')
def _sleepy(x):
    import time
    time.sleep(0.5)
    return x
"""

READ_LOOKUP = (
    "%%spark_session {}\n"
    "from pyspark.sql.functions import udf\n"
    "print(spark.range(1).select(udf(lambda x: open('lookup.csv').read(), 'string')('id'))"
    ".first()[0])"
)


@dataclass
class Notebooks:
    server: JupyterServer
    one: Kernel
    two: Kernel
    one_id: str
    two_id: str
    #: Notebooks three and four (CI's four notebooks), sessions "c3" and "c4": each fault
    #: asserts their next cell too.
    others: list[Kernel]

    @property
    def rendezvous(self) -> Rendezvous:
        return Rendezvous(self.server.runtime_dir)

    def record(self) -> ServerRecord:
        record = self.rendezvous.read()
        assert record is not None, "no shared server record"
        return record


def _open_notebook(server: JupyterServer, path: str) -> tuple[str, Kernel]:
    session = server.api(
        "POST", "api/sessions", {"path": path, "type": "notebook", "kernel": {"name": "python3"}}
    )
    kernel_id = session["kernel"]["id"]
    connection_file = server.runtime_dir / f"kernel-{kernel_id}.json"
    wait_until(connection_file.exists, 60, 0.1)
    kernel = Kernel.attach(str(connection_file))
    kernel.ok("%load_ext jupyter_spark_sessions")
    return kernel_id, kernel


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebooks]:
    base = tmp_path_factory.mktemp("shared-driver")
    server = JupyterServer(base)
    (base / "ipython" / "profile_default" / "ipython_config.py").write_text(CONFIG)
    kernels: list[Kernel] = []
    try:
        one_id, one = _open_notebook(server, "one.ipynb")
        kernels.append(one)
        two_id, two = _open_notebook(server, "two.ipynb")
        kernels.append(two)
        for name in ("three.ipynb", "four.ipynb"):
            kernels.append(_open_notebook(server, name)[1])
        yield Notebooks(server, one, two, one_id, two_id, kernels[2:])
    finally:
        for kernel in kernels:
            kernel.close()
        record = Rendezvous(server.runtime_dir).read()  # before the stop may remove it
        if server.process.poll() is None:
            server.stop()
        kill_recorded_server(server.runtime_dir, record)


def _pid(kernel: Kernel) -> int:
    return int(kernel.value("__import__('os').getpid()"))


def _java_descendants(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True) if p.name() == "java"]


#: Notebooks three and four's sessions.
OTHERS = ("c3", "c4")


def _others_run_on(notebooks: Notebooks) -> None:
    """Notebooks three and four: their next cell runs on the shared driver."""
    for kernel, name in zip(notebooks.others, OTHERS, strict=True):
        assert kernel.value(f"{SESSION.format(name)}.range(4).count()") == 4, name


def _survivors(notebooks: Notebooks) -> list[tuple[Kernel, str]]:
    """The notebooks left after notebook one's kernel was killed, with their session."""
    return [(notebooks.two, "b"), *zip(notebooks.others, OTHERS, strict=True)]


def _each_says_the_driver_is_gone(notebooks: Notebooks, why: str = "") -> None:
    """Each notebook's next cell: one line naming the shared driver and the way back."""
    for kernel, name in _survivors(notebooks):
        lost = kernel.execute(f"%%spark_session {name}\nspark.range(3).count()")
        assert lost.status == "error", name
        lines = [line for line in [*lost.stderr.splitlines(), lost.error_value] if line.strip()]
        said = [line for line in lines if "the shared Spark driver" in line]
        assert any(f"reconnect {name}" in line and why in line for line in said), lines
        assert "Traceback" not in lost.stderr and len(lost.traceback) <= 3, lost.traceback


def _reconnect_all_at_once(notebooks: Notebooks, old: ServerRecord) -> None:
    """``reconnect`` sent to every notebook at the same moment: one new server, started
    by one of them (the others wait for it), each session back with its file."""
    sent = [
        (kernel, kernel.client.execute(f"%spark_session reconnect {name}"))
        for kernel, name in _survivors(notebooks)
    ]
    results = [kernel.collect(msg_id, 300) for kernel, msg_id in sent]
    failed = [(r.stderr, r.error_value, r.traceback) for r in results if r.status != "ok"]
    assert not failed, (failed, _keeper_logs(notebooks))
    outs = [result.stdout for result in results]
    assert sum("Starting the shared Spark driver" in out for out in outs) == 1, outs
    new = notebooks.record()
    assert new.id != old.id
    assert [p.pid for p in server_jvms(notebooks.server.runtime_dir)] == [new.server_pid]
    assert notebooks.two.ok(READ_LOOKUP.format("b")).stdout.strip() == "from two"
    _others_run_on(notebooks)


def _keeper_logs(notebooks: Notebooks) -> dict[str, str]:
    """The last lines of each shared server's keeper log (what a failure shows)."""
    return {
        log.parent.name: "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        for log in sorted(notebooks.server.runtime_dir.glob("jss-shared-driver-*/keeper.log"))
    }


def test_two_notebooks_share_one_spark_jvm(notebooks: Notebooks) -> None:
    out = notebooks.one.ok("%spark_session create a --remote shared").stdout
    assert "Starting the shared Spark driver (local[2])" in out, out
    assert "Created session 'a' on the shared Spark driver, Spark Connect sc://localhost:" in out
    out = notebooks.two.ok("%spark_session create b --remote shared").stdout
    assert "Starting" not in out, out  # joined, not started again
    for kernel, name in zip(notebooks.others, OTHERS, strict=True):
        assert "Starting" not in kernel.ok(f"%spark_session create {name} --remote shared").stdout
    for kernel, name in ((notebooks.one, "a"), (notebooks.two, "b")):
        assert kernel.value(f"{SESSION.format(name)}.range(10).count()") == 10
    _others_run_on(notebooks)
    record = notebooks.record()
    assert record.state == "running" and record.keeper.alive()
    # One JVM: the keeper's server; neither kernel started one of its own.
    assert [p.pid for p in _java_descendants(record.keeper.pid)] == [record.server_pid]
    # (The keeper is the first kernel's child, detached: its JVM counts once.)
    for kernel in (notebooks.one, notebooks.two, *notebooks.others):
        assert {p.pid for p in _java_descendants(_pid(kernel))} <= {record.server_pid}
    leases = {lease.notebook: lease for lease in notebooks.rendezvous.leases(record)}
    assert set(leases) == {"one.ipynb", "two.ipynb", "three.ipynb", "four.ipynb"}, leases
    assert set(leases["one.ipynb"].sessions) == {"a"}
    assert leases["one.ipynb"].kernel_id == notebooks.one_id
    # Each notebook's session in a pool of its own on the server.
    pools = {lease.sessions[name]["pool"] for lease in leases.values() for name in lease.sessions}
    assert len(pools) == 4, pools


def test_the_rendezvous_files_are_private_and_the_token_is_needed(notebooks: Notebooks) -> None:
    record = notebooks.record()
    folder = notebooks.rendezvous.server_folder(record)
    for path in (notebooks.server.runtime_dir / RECORD, notebooks.server.runtime_dir / LOCK):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for lease in (folder / "leases").iterdir():
        assert stat.S_IMODE(lease.stat().st_mode) == 0o600, lease
    assert "token=" in record.url
    # The token is not on any command line (every local user can read those).
    token = record.url.split("token=", 1)[1]
    for process in psutil.process_iter(["cmdline"]):
        assert token not in " ".join(process.info["cmdline"] or [])
    # A client without the token is refused.
    from pyspark.sql.connect.client import SparkConnectClient

    client = SparkConnectClient(connection=f"sc://localhost:{record.port}")
    with pytest.raises(Exception) as refused:
        client.get_configs("spark.app.name")
    client.close()
    assert "UNAUTHENTICATED" in str(refused.value) or "token" in str(refused.value).lower()
    # The server listens on loopback only.
    listening = {
        c.laddr.ip
        for c in psutil.Process(record.server_pid).net_connections("inet")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == record.port
    }
    assert listening and listening <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}, listening


def test_same_name_files_differ_per_notebook(notebooks: Notebooks, tmp_path) -> None:
    for kernel, name, text in ((notebooks.one, "a", "from one"), (notebooks.two, "b", "from two")):
        source = tmp_path / name / "lookup.csv"
        source.parent.mkdir()
        source.write_text(text)
        kernel.ok(f"%spark_session add_file {name} {source}")
    assert notebooks.one.ok(READ_LOOKUP.format("a")).stdout.strip() == "from one"
    assert notebooks.two.ok(READ_LOOKUP.format("b")).stdout.strip() == "from two"
    # Temp views stay in their notebook's session too.
    notebooks.one.ok(f"{SESSION.format('a')}.sql('CREATE TEMP VIEW only_a AS SELECT 1')")
    missing = notebooks.two.execute(f"{SESSION.format('b')}.table('only_a').count()")
    assert missing.status == "error" and "only_a" in missing.error_value


def test_what_connect_cannot_do_is_one_line_naming_the_classic_way(notebooks: Notebooks) -> None:
    for code in ("spark.sparkContext.parallelize([1, 2]).count()", "spark.range(3).rdd.count()"):
        result = notebooks.two.execute(f"%%spark_session b\n{code}")
        assert result.status == "error", code
        assert "Spark Connect has no `" in result.error_value, result.error_value
        assert "`%spark_session create NAME` (without --remote)" in result.error_value
        assert len(result.traceback) <= 3, result.traceback


def test_a_busy_notebook_does_not_starve_the_others_small_job(notebooks: Notebooks) -> None:
    small = "%%spark_session b\nspark.range(0, 4, 1, 4).select(_sleepy('id')).collect()"
    notebooks.two.ok(SLEEPY_UDF.format("b"))
    notebooks.one.ok(SLEEPY_UDF.format("a"))
    notebooks.two.ok(small)  # warm: the server's Python workers for b
    started = time.monotonic()
    notebooks.two.ok(small)
    alone = time.monotonic() - started
    # a: 200 half-second tasks (50 s on 2 slots, FIFO would hold b for all of it).
    notebooks.one.ok(
        "%%spark_session a\n"
        "_outcome = {}\n"
        "_big = spark.range(0, 200, 1, 200).select(_sleepy('id'))\n"
        "def _run():\n"
        "    try:\n"
        "        _outcome.update(n=len(_big.collect()))\n"
        "    except Exception as exc:\n"
        "        _outcome.update(error=type(exc).__name__)\n"
        "threading.Thread(target=_run, daemon=True).start()\n"
        "time.sleep(3)"
    )
    try:
        started = time.monotonic()
        result = notebooks.two.ok(small)
        beside = time.monotonic() - started
        assert notebooks.one.value("_outcome") == {}, "a's job ended before b's ran beside it"
        # Fair is about 2x alone (one of two slots), FIFO tens of times.
        assert beside < 4 * alone + 1.0, f"b alone {alone:.2f} s, beside a {beside:.2f} s"
        # Inside b's job (read from the shared server's UI): its own stage only, not a's
        # 200-task stage running beside it, named after b's line.
        (group,) = final_groups(result)
        (row,) = group["inside"]["stages"]
        assert (row["total"], row["done"], row["status"]) == (4, 4, "complete"), row
        assert row["name"].startswith("collect at In ["), row
        assert sum(group["inside"]["chart"]["slots"]) == 2, group["inside"]["chart"]

        # The sidebar's "Shared driver" section: both notebooks, a's running work.
        # Polled, as the sidebar does: on a loaded machine one read of the server's UI may
        # not answer in time (the reply then says "unknown": null slots).
        replies: list[dict] = []

        def read_shared() -> bool:
            replies.append(notebooks.server.api("GET", "jupyter-spark-sessions/api/shared-driver"))
            return bool(replies[-1]["server"] and replies[-1]["server"]["slots"])

        assert wait_until(read_shared, 20, 1.0), replies[-3:]
        shared = replies[-1]
        server = shared["server"]
        assert server["master"] == "local[2]" and server["slots"] == 2, server
        assert server["memory_bytes"] > 100 * 2**20 and server["uptime_s"] > 0, server
        by_notebook = {n["notebook"]: n for n in shared["notebooks"]}
        assert set(by_notebook) == {"one.ipynb", "two.ipynb", "three.ipynb", "four.ipynb"}, shared
        assert by_notebook["one.ipynb"]["this_server"] is True
        assert by_notebook["one.ipynb"]["kernel_id"] == notebooks.one_id
        (a,) = by_notebook["one.ipynb"]["sessions"]
        assert a["name"] == "a" and a["running_jobs"] == 1 and 0 < a["slot_share"] <= 1, a
        # Its Spark UI through this Jupyter server (the record's secret added).
        ui = notebooks.server.request("GET", server["ui_path"] + "jobs/")
        assert ui.status == 200 and "Spark Jobs" in ui.text, ui.status

        # Cancel from that section: the relay to notebook one; b's work is not touched.
        reply = notebooks.server.api(
            "POST",
            f"jupyter-spark-sessions/api/kernels/{notebooks.one_id}/requests",
            {"version": 1, "action": "cancel", "session": "a"},
        )
        assert reply["status"] == "ok" and reply["cancelling"], reply
        assert wait_until(lambda: notebooks.one.value("_outcome") != {}, 15, 0.3)
        assert "error" in notebooks.one.value("_outcome"), "a's job was not cancelled"
        notebooks.two.ok(small)  # b still runs its work
    finally:  # a's 200 tasks must not run on into the next tests of this server
        if notebooks.one.value("_outcome") == {}:
            notebooks.one.ok("%spark_session cancel --session a")


def _running_jobs(notebooks: Notebooks) -> list[dict]:
    """The shared server's running jobs, from its Spark UI's REST API through the
    Jupyter server's route (the one the sidebar links)."""
    reply = notebooks.server.api("GET", "jupyter-spark-sessions/api/shared-driver")
    ui = reply["server"]["ui_path"]
    (app,) = json.loads(notebooks.server.request("GET", ui + "api/v1/applications").text)
    jobs = notebooks.server.request("GET", f"{ui}api/v1/applications/{app['id']}/jobs")
    return [job for job in json.loads(jobs.text) if job["status"] == "RUNNING"]


def test_kill_9_of_one_kernel_releases_its_session_and_the_other_keeps_working(
    notebooks: Notebooks,
) -> None:
    record = notebooks.record()
    lease = next(
        lease for lease in notebooks.rendezvous.leases(record) if lease.notebook == "one.ipynb"
    )
    session_id = lease.sessions["a"]["session_id"]
    # Mid-job: a's 200 half-second tasks run on the server when its kernel is killed.
    notebooks.one.ok(
        "%%spark_session a\n"
        "threading.Thread(target=lambda: spark.range(0, 200, 1, 200).select(_sleepy('id'))"
        ".collect(), daemon=True).start()"
    )
    assert wait_until(lambda: len(_running_jobs(notebooks)) == 1, 30, 0.3), "a's job never ran"
    os.kill(_pid(notebooks.one), signal.SIGKILL)
    # Its operation ends on the server (the keeper releases the session: within a
    # second or two, docs/connect.md), not after its 50 s.
    assert wait_until(lambda: _running_jobs(notebooks) == [], 15, 0.2), _running_jobs(notebooks)
    lease_path = notebooks.rendezvous.lease_path(record, lease.kernel.pid)
    assert wait_until(lambda: not lease_path.exists(), 15, 0.2)
    log = notebooks.rendezvous.server_folder(record) / "keeper.log"
    assert wait_until(lambda: f"Released session {session_id}" in log.read_text(), 15, 0.2)
    # The server no longer knows the session.
    from pyspark.sql.connect.client import SparkConnectClient

    client = SparkConnectClient(connection=f"{record.url};session_id={session_id}")
    with pytest.raises(Exception) as closed:
        client.get_configs("spark.app.name")
    client.close()
    assert "SESSION_CLOSED" in str(closed.value), str(closed.value)[:300]
    # The other notebooks' sessions work on, on the same server.
    assert notebooks.two.value(f"{SESSION.format('b')}.range(5).count()") == 5
    _others_run_on(notebooks)
    assert notebooks.record().id == record.id
    assert [p.pid for p in server_jvms(notebooks.server.runtime_dir)] == [record.server_pid]


def test_kill_9_of_the_keeper_leaves_the_sessions_and_a_kernel_takes_the_server_over(
    notebooks: Notebooks,
) -> None:
    record = notebooks.record()
    notebooks.two.ok(f"{SESSION.format('b')}.sql('CREATE TEMP VIEW kept_b AS SELECT 42 AS v')")
    os.kill(record.keeper.pid, signal.SIGKILL)

    def taken_over() -> bool:
        now = notebooks.rendezvous.read()
        return now is not None and now.keeper.pid != record.keeper.pid and now.keeper.alive()

    # Notebook two's kernel (it looks every 2 s) starts a keeper for the running server.
    assert wait_until(taken_over, 20, 0.2), notebooks.rendezvous.read()
    now = notebooks.record()
    assert (now.id, now.server_pid, now.url) == (record.id, record.server_pid, record.url)
    log = notebooks.rendezvous.server_folder(record) / "keeper.log"
    took_over = f"Took over the shared Spark Connect server {record.id}"
    assert wait_until(lambda: took_over in log.read_text(), 20, 0.2), log.read_text()
    # b lives on: its view, its file, with nothing to reconnect; one server JVM.
    assert notebooks.two.value(f"{SESSION.format('b')}.table('kept_b').first().v") == 42
    assert notebooks.two.ok(READ_LOOKUP.format("b")).stdout.strip() == "from two"
    _others_run_on(notebooks)
    assert [p.pid for p in server_jvms(notebooks.server.runtime_dir)] == [record.server_pid]
    # The keeper and every kernel gone (the kernels frozen: none can take over): the
    # server ends itself once no keeper looked after it for the grace time (10 s here).
    frozen = [psutil.Process(_pid(kernel)) for kernel in (notebooks.two, *notebooks.others)]
    for process in frozen:
        process.suspend()
    try:
        os.kill(now.keeper.pid, signal.SIGKILL)
        server = psutil.Process(record.server_pid)
        _, alive = psutil.wait_procs([server], timeout=40)
        assert alive == [], "the server outlived its keepers"
    finally:
        for process in frozen:
            process.resume()
    assert server_jvms(notebooks.server.runtime_dir) == []
    # Each notebook's next cell says so in one line; reconnect brings each session back
    # on one new server.
    _each_says_the_driver_is_gone(notebooks)
    _reconnect_all_at_once(notebooks, record)


def test_a_killed_shared_driver_is_one_line_and_reconnect_brings_the_session_back(
    notebooks: Notebooks,
) -> None:
    record = notebooks.record()
    os.kill(record.server_pid, signal.SIGKILL)
    assert wait_until(lambda: not record.keeper.alive(), 15, 0.2), "the keeper stayed"
    _each_says_the_driver_is_gone(notebooks, why="was killed (SIGKILL)")
    # Three notebooks reconnect at the same moment: one new server, started once.
    _reconnect_all_at_once(notebooks, record)


#: Notebook four's cell that exhausts the shared server's heap (512 MB: CONFIG): 256
#: strings of 4 MB from a Python UDF gathered into one row. A task's
#: OutOfMemoryError stops the server's SparkContext at once; its JVM exits (Spark's code
#: 52) tens of seconds later.
EAT_THE_HEAP = (
    "%%spark_session c4\n"
    "from pyspark.sql.functions import collect_list, size, udf\n"
    "big = udf(lambda x: 'x' * (4 << 20), 'string')\n"
    "spark.range(0, 256, 1, 16).select(big('id').alias('v')).agg(size(collect_list('v')))"
    ".collect()"
)


def test_a_udf_that_exhausts_the_drivers_memory_is_one_line_and_reconnect_brings_all_back(
    notebooks: Notebooks,
) -> None:
    record = notebooks.record()
    eaten = notebooks.others[1].execute(EAT_THE_HEAP)
    assert eaten.status == "error"
    lines = [line for line in [*eaten.stderr.splitlines(), eaten.error_value] if line.strip()]
    said = [line for line in lines if "the shared Spark driver" in line]
    # Said from the server's log while it winds down (or its keeper's note, once gone).
    assert any("ran out of memory" in line and "reconnect c4" in line for line in said), lines
    assert "Traceback" not in eaten.stderr and len(eaten.traceback) <= 3, eaten.traceback
    # Its job was lost with the driver: Spark's "cancelled because SparkContext was shut
    # down" is no cancel.
    board = notebooks.others[1].ok("%spark_session jobs c4").stdout
    (row,) = [line for line in board.splitlines() if "collect_list" in line]
    assert row.split()[1] == "lost" and "cancelled" not in board, board
    try:
        server = [psutil.Process(record.server_pid)]
    except psutil.NoSuchProcess:
        server = []  # already gone (a loaded machine's cell ends after it)
    _, alive = psutil.wait_procs(server, timeout=120)
    assert alive == [], "the server lived on after its SparkContext stopped"
    assert wait_until(lambda: not record.keeper.alive(), 15, 0.2), "the keeper stayed"
    # Each notebook's next cell says why, and all come back on one new server.
    _each_says_the_driver_is_gone(notebooks, why="ran out of memory")
    _reconnect_all_at_once(notebooks, record)


def test_a_corrupted_record_is_a_new_server_and_the_old_ones_sessions_run_on(
    notebooks: Notebooks,
) -> None:
    old = notebooks.record()
    path = notebooks.server.runtime_dir / RECORD
    path.write_text("{not json")  # still 0600 and the user's: read, and refused
    out = notebooks.two.ok("%spark_session create c --remote shared").stdout
    assert "Starting the shared Spark driver" in out, out  # a new one, nothing joined
    new = notebooks.record()
    assert new.id != old.id and new.server_pid != old.server_pid
    assert notebooks.two.value(f"{SESSION.format('c')}.range(4).count()") == 4
    # b stays on the server it was made on, until its notebook lets it go.
    assert notebooks.two.value(f"{SESSION.format('b')}.range(5).count()") == 5
    assert sorted(p.pid for p in server_jvms(notebooks.server.runtime_dir)) == sorted(
        [old.server_pid, new.server_pid]
    )


def test_the_jupyter_servers_shutdown_leaves_no_java_process(notebooks: Notebooks) -> None:
    record = notebooks.record()
    keeper, java = psutil.Process(record.keeper.pid), psutil.Process(record.server_pid)
    # SIGTERM, as a user's Ctrl-C or a hub's stop: the server shuts its kernels down.
    stop_process(notebooks.server.process, notebooks.server._log)
    others = server_jvms(notebooks.server.runtime_dir)  # a server of an earlier record too
    _, alive = psutil.wait_procs([keeper, java, *others], timeout=30)
    assert alive == [], f"still running 30 s after the Jupyter server: {alive}"
    assert notebooks.rendezvous.read() is None
    assert not notebooks.rendezvous.server_folder(record).exists()


# -- the soak, CI's size (issue 50, point 1) ---------------------------------------------
# benchmarks/shared_driver_soak.py for 75 seconds with four notebooks of a Jupyter server
# of its own, two sessions each (two running a streaming query), a mix of DataFrame, SQL,
# file-reading and cancelled cells, kernels restarted and shut down every 8 s; then one
# test per verdict. The hour with ten notebooks is the benchmark's (docs/benchmarks.md).


@pytest.fixture(scope="module")
def soaked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # Imported here: the benchmark imports this module's _open_notebook.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from shared_driver_soak import QUICK, soak

    result = soak(tmp_path_factory.mktemp("soak"), **QUICK, seed=50)
    print({k: result[k] for k in ("cells", "chaos", "idle_driver", "after_notebooks_left")})
    return result


@pytest.mark.timeout(900)  # the soak runs in this first test's set-up: 75 seconds and more
def test_every_cell_was_right_and_read_its_own_notebooks_file(soaked: dict[str, Any]) -> None:
    assert soaked["failures"] == [], soaked["failures"]
    assert set(soaked["cells"]) >= {"dataframe", "sql", "file", "cancel", "streaming"}
    assert soaked["verdicts"]["every_cell_right"]


def test_kernels_were_restarted_and_shut_down_and_their_sessions_left(
    soaked: dict[str, Any],
) -> None:
    # (How long a restart takes under CI's load is the benchmark's figure, not a bound.)
    assert sum(soaked["chaos"].values()) >= 4, soaked["chaos"]
    assert soaked["verdicts"]["no_lease_left"]


def test_the_drivers_heap_is_back_to_its_idle_level(soaked: dict[str, Any]) -> None:
    assert soaked["verdicts"]["heap_back"], (soaked["idle_driver"], soaked["after_notebooks_left"])


def test_the_drivers_threads_are_back_to_their_idle_level(soaked: dict[str, Any]) -> None:
    assert soaked["verdicts"]["threads_back"], (soaked["threads_grown"], soaked["python_daemons"])


def test_no_python_daemon_of_an_ended_session_is_left(soaked: dict[str, Any]) -> None:
    assert soaked["verdicts"]["python_daemons_released"], soaked["python_daemons"]


def test_nothing_is_left_once_the_jupyter_server_stopped(soaked: dict[str, Any]) -> None:
    assert soaked["left_after_stop"] == [] and soaked["verdicts"]["nothing_left_after_stop"]

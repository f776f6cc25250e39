"""The shared driver's keeper decides, from its kernels' leases, whose sessions to
release and when to stop the server (shared_driver/keeper.py), without a JVM: real
processes stand for kernels and their Jupyter servers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from jupyter_spark_sessions.backends import driver_jar
from jupyter_spark_sessions.shared_driver.keeper import KEEPER_WATCH, Keeper, watched_conf
from jupyter_spark_sessions.shared_driver.rendezvous import (
    RUNNING,
    Lease,
    Process,
    Rendezvous,
    ServerRecord,
)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def _dead() -> Process:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    found = Process.of(process.pid)
    process.wait()
    return found


def _keeper(
    tmp_path: Path, idle_timeout: float = 600.0, restart_grace: float = 0.0
) -> tuple[Keeper, list[str]]:
    rendezvous = Rendezvous(tmp_path)
    record = ServerRecord(
        id="abc",
        keeper=Process.of(os.getpid()),
        state=RUNNING,
        master="local[2]",
        started_at=time.time(),
        url="sc://localhost:1/;token=t",
    )
    rendezvous.server_folder(record).mkdir(exist_ok=True)
    rendezvous.write(record)
    keeper = Keeper(rendezvous, record, {}, idle_timeout, 10.0, restart_grace=restart_grace)
    released: list[str] = []
    keeper.release = lambda sessions: released.extend(s["session_id"] for s in sessions)  # type: ignore[method-assign]
    return keeper, released


def _lease(kernel: Process, parent: Process, **sessions: str) -> Lease:
    held = {
        name: {"session_id": sid, "user_id": "", "pool": name} for name, sid in sessions.items()
    }
    return Lease(kernel=kernel, parent=parent, sessions=held)


def test_a_gone_kernels_sessions_are_released_and_its_lease_removed(tmp_path, sleeper) -> None:
    keeper, released = _keeper(tmp_path)
    me = Process.of(os.getpid())
    keeper.rendezvous.write_lease(keeper.record, _lease(_dead(), me, a="s-1"))
    keeper.rendezvous.write_lease(keeper.record, _lease(Process.of(sleeper.pid), me, b="s-2"))
    assert keeper.check_leases() is False  # b's kernel still has a session
    assert released == ["s-1"]
    assert [lease.sessions.keys() for lease in keeper.rendezvous.leases(keeper.record)] == [
        {"b": ""}.keys()
    ]
    assert keeper.rendezvous.read() is not None


def test_it_stops_when_no_session_is_left_and_every_jupyter_server_exited(
    tmp_path, sleeper
) -> None:
    keeper, _ = _keeper(tmp_path)
    kernel = Process.of(sleeper.pid)
    parent = _dead()  # the kernel's Jupyter server, gone
    keeper.rendezvous.write_lease(keeper.record, _lease(kernel, parent, a="s-1"))
    assert keeper.check_leases() is False  # never while a notebook has a session there
    keeper.rendezvous.write_lease(keeper.record, _lease(kernel, parent))
    assert keeper.check_leases() is True
    assert keeper.rendezvous.read() is None  # removed first: newcomers start a new one


def test_a_restarted_jupyter_server_has_the_grace_to_come_back(tmp_path, sleeper) -> None:
    keeper, _ = _keeper(tmp_path, restart_grace=0.5)
    keeper.rendezvous.write_lease(keeper.record, _lease(Process.of(sleeper.pid), _dead()))
    assert keeper.check_leases() is False  # every Jupyter server gone: the grace starts
    time.sleep(0.6)
    assert keeper.check_leases() is True
    # Within the grace, a kernel of the new Jupyter server joins: it runs on.
    keeper, _ = _keeper(tmp_path, restart_grace=0.5)
    keeper.rendezvous.write_lease(keeper.record, _lease(Process.of(sleeper.pid), _dead()))
    assert keeper.check_leases() is False
    me = Process.of(os.getpid())  # the new Jupyter server
    keeper.rendezvous.write_lease(keeper.record, _lease(Process.of(os.getpid()), me))
    time.sleep(0.6)
    assert keeper.check_leases() is False


def test_it_stops_after_the_idle_time_and_not_before(tmp_path, sleeper) -> None:
    keeper, _ = _keeper(tmp_path, idle_timeout=0.5)
    me = Process.of(os.getpid())  # the Jupyter server: alive
    keeper.rendezvous.write_lease(keeper.record, _lease(Process.of(sleeper.pid), me))
    assert keeper.check_leases() is False
    time.sleep(0.6)
    assert keeper.check_leases() is True


def test_a_kernel_still_joining_holds_the_server(tmp_path, sleeper) -> None:
    keeper, _ = _keeper(tmp_path, idle_timeout=0.0)
    lease = _lease(Process.of(sleeper.pid), _dead())
    lease.joining_until = time.time() + 60
    keeper.rendezvous.write_lease(keeper.record, lease)
    assert keeper.check_leases() is False


def test_a_process_is_told_apart_from_a_later_one_with_its_pid() -> None:
    me = Process.of(os.getpid())
    assert me.alive()
    assert not Process(me.pid, me.started - 100).alive()
    assert not _dead().alive()


def test_a_record_only_its_owner_can_read_is_trusted(tmp_path) -> None:
    keeper, _ = _keeper(tmp_path)
    path = tmp_path / "jss-shared-driver.json"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    path.chmod(0o644)
    assert keeper.rendezvous.read() is None


def test_a_starter_that_left_before_the_first_look_still_stops_it_with_its_server(
    tmp_path,
) -> None:
    keeper, _ = _keeper(tmp_path)
    assert keeper.check_leases() is False  # no lease, no known Jupyter server: idle rule
    keeper, _ = _keeper(tmp_path)
    keeper._parents = {_dead()}  # as main() gives it: the starting kernel's parent
    assert keeper.check_leases() is True


def test_the_servers_watch_joins_the_users_listeners_class_path_and_grace(tmp_path) -> None:
    heartbeat = tmp_path / "keeper.heartbeat"
    conf = watched_conf(
        {
            "spark.extraListeners": "com.example.Theirs",
            "spark.driver.extraClassPath": "/opt/theirs.jar",
            "spark.jss.keeperGraceSeconds": "5",
        },
        heartbeat,
    )
    assert conf["spark.extraListeners"] == f"com.example.Theirs,{KEEPER_WATCH}"
    # The user's class path is theirs; the jar goes after Spark's jars (the launcher's
    # SPARK_DIST_CLASSPATH), after the user's entries there too.
    assert conf["spark.driver.extraClassPath"] == "/opt/theirs.jar"
    env = driver_jar.class_path_env({"SPARK_DIST_CLASSPATH": "/opt/hadoop/*"})
    assert env["SPARK_DIST_CLASSPATH"].split(os.pathsep) == ["/opt/hadoop/*", str(driver_jar.JAR)]
    assert driver_jar.class_path_env(env) == env  # added once
    assert conf["spark.jss.keeperGraceSeconds"] == "5"
    assert conf["spark.jss.keeperHeartbeat"] == str(heartbeat)
    assert watched_conf({}, heartbeat)["spark.jss.keeperGraceSeconds"] == "60.0"


def test_the_keeper_touches_its_heartbeat(tmp_path) -> None:
    keeper, _ = _keeper(tmp_path)
    keeper.beat()
    first = keeper.heartbeat.stat()
    assert first.st_mode & 0o777 == 0o600
    time.sleep(0.05)
    keeper.beat()
    assert keeper.heartbeat.stat().st_mtime_ns > first.st_mtime_ns


@pytest.mark.spark  # its check of the Java runtime runs `java -version`
def test_a_standalone_master_that_does_not_answer_is_one_line_and_starts_nothing(
    tmp_path,
) -> None:
    import socket

    from jupyter_spark_sessions.config import SparkSessionsConfig
    from jupyter_spark_sessions.errors import ConnectError
    from jupyter_spark_sessions.shared_driver.membership import (
        SharedDriverMembership,
        unreachable_master,
    )

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    master = f"spark://127.0.0.1:{port}"
    config = SparkSessionsConfig(shared_driver_master=master, shared_driver_dir=str(tmp_path))
    with pytest.raises(ConnectError) as refused:
        SharedDriverMembership(config).endpoint(lambda line: None)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(
        f"The shared Spark driver's master {master} does not answer: 127.0.0.1:{port} ("
    ), line
    assert Rendezvous(tmp_path).read() is None, "a record written"
    assert not list(tmp_path.glob("jss-shared-driver-*")), "a server's folder made"
    # One address that answers of two is enough; other masters are Spark's to check.
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    try:
        answering = f"spark://127.0.0.1:{port},127.0.0.1:{listening.getsockname()[1]}"
        assert unreachable_master(answering) == ""
    finally:
        listening.close()
    assert unreachable_master("local[2]") == unreachable_master("yarn") == ""


def test_a_lease_of_another_user_is_not_read(tmp_path, sleeper) -> None:
    keeper, released = _keeper(tmp_path)
    lease = _lease(Process.of(sleeper.pid), Process.of(os.getpid()), a="s-a")
    keeper.rendezvous.write_lease(keeper.record, lease)
    path = keeper.rendezvous.lease_path(keeper.record, sleeper.pid)
    os.chown(path, 65534, 65534)  # nobody's now (the suite runs as root in CI)
    assert keeper.rendezvous.leases(keeper.record) == []
    sleeper.kill()
    sleeper.wait()
    keeper.check_leases()
    assert released == [], "released the sessions a lease of another user names"


def test_how_a_server_ended_reads_in_a_few_words(tmp_path: Path) -> None:
    # What the keeper writes for the notebooks' next cells (keeper.end_of).
    from jupyter_spark_sessions.backends.connect_endpoint import Endpoint
    from jupyter_spark_sessions.shared_driver.keeper import end_of, write_end_note

    log = tmp_path / "connect-server.log"
    assert end_of(-9, log) == "was killed (SIGKILL)"  # no log yet: still said
    assert end_of(3, log) == "exited (code 3)"
    assert end_of(None, log) == "exited"  # a server taken over: its code is not known
    log.write_text(
        "26/12/07 02:01:45 ERROR Executor: Exception in task 8.0 in stage 0.0 (TID 8)\n"
        "java.lang.OutOfMemoryError: Java heap space\n"
        "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)\n"
    )
    said = "ran out of memory (java.lang.OutOfMemoryError: Java heap space)"
    assert end_of(-15, log) == said and end_of(None, log) == said
    # A notebook's cell while that server still winds down (no note yet): its log says.
    ending = Endpoint("sc://localhost:1", "localhost", 1, shared=True, log_path=str(log))
    ending = replace(ending, end_note_path=str(tmp_path / "server-ended"))
    assert ending.end_note() == said
    write_end_note(tmp_path / "server-ended", "was killed (SIGKILL)")  # the keeper's wins
    assert ending.end_note() == "was killed (SIGKILL)"
    # A day's log: its end is read, not all of it.
    log.write_text("26/12/07 INFO SparkContext: a line of an hour's log\n" * 60_000)
    with log.open("a") as more:
        more.write("java.lang.OutOfMemoryError: GC overhead limit exceeded\n")
    assert (
        end_of(None, log)
        == "ran out of memory (java.lang.OutOfMemoryError: GC overhead limit exceeded)"
    )

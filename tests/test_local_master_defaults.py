"""What a SparkContext this project starts is given, without starting one: on a local
master, loopback binds, the UI's SPARK_LOCAL_IP (only while the JVM is launched) and a
private scratch folder; the UI's kill links off everywhere; the user's settings win.
``test_privacy_kernel.py`` measures the same on a real JVM."""

from __future__ import annotations

import os
from typing import Any

import pytest
from pyspark.sql import SparkSession

from jupyter_spark_sessions.backends import context_start, local_master


class RecordingBuilder:
    """Stands in for ``SparkSession.builder``: records what start_context asks for."""

    def __init__(self) -> None:
        self.conf: dict[str, str] = {}
        self.environ_at_start: dict[str, str] = {}
        self.launched: tuple[dict[str, str], dict[str, str]] | None = None

    def master(self, master: str) -> RecordingBuilder:
        self.conf["spark.master"] = master
        return self

    def appName(self, name: str) -> RecordingBuilder:
        return self

    def config(self, key: str, value: str) -> RecordingBuilder:
        self.conf[key] = value
        return self

    def getOrCreate(self) -> Any:
        self.environ_at_start = dict(os.environ)
        return "session"

    def launch(self, settings: dict[str, str]) -> None:
        """Stands in for the JVM's launch (``context_start._launch_filtered``)."""
        self.launched = (dict(settings), dict(os.environ))


@pytest.fixture
def builder(monkeypatch: pytest.MonkeyPatch) -> RecordingBuilder:
    recording = RecordingBuilder()
    monkeypatch.setattr(SparkSession, "builder", recording)
    monkeypatch.setattr(context_start.driver, "current_gateway", lambda: None)
    monkeypatch.setattr(context_start.jvm_stderr, "can_filter", lambda: True)
    monkeypatch.setattr(context_start, "_launch_filtered", recording.launch)
    for name in ("SPARK_LOCAL_IP", "SPARK_LOCAL_DIRS"):
        monkeypatch.delenv(name, raising=False)
    return recording


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[*]", True),
        ("local[2, 3]", True),
        ("local-cluster[2,1,1024]", True),
        ("spark://host:7077", False),
        ("yarn", False),
        ("k8s://https://host:6443", False),
        ("localhost", False),
    ],
)
def test_which_masters_are_local(master: str, local: bool) -> None:
    assert local_master.is_local_master(master) is local
    # Tasks in the driver's JVM: local masters but local-cluster (executor JVMs).
    in_driver = local and not master.startswith("local-cluster")
    assert local_master.tasks_run_in_driver(master) is in_driver


def test_local_master_binds_loopback_and_keeps_scratch_private(builder: RecordingBuilder) -> None:
    context_start.start_context("local[2]", "app", {}, scratch_dir="/private/.spark-scratch")
    assert builder.conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert builder.conf["spark.driver.host"] == "127.0.0.1"
    assert builder.conf["spark.ui.killEnabled"] == "false"
    # The UI binds to SPARK_LOCAL_IP, the scratch files go to SPARK_LOCAL_DIRS (not
    # spark.local.dir, which Spark warns about at each start): set for the JVM's
    # launch, then gone again.
    assert builder.environ_at_start["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert builder.environ_at_start["SPARK_LOCAL_DIRS"] == "/private/.spark-scratch"
    assert "spark.local.dir" not in builder.conf
    assert "SPARK_LOCAL_IP" not in os.environ and "SPARK_LOCAL_DIRS" not in os.environ
    # The JVM is launched (its stderr filtered) with the same settings and environment.
    assert builder.launched == (builder.conf, builder.environ_at_start)


def test_cluster_master_keeps_sparks_own_binding(builder: RecordingBuilder) -> None:
    context_start.start_context("spark://host:7077", "app", {}, scratch_dir="/private/x")
    assert not {"spark.driver.bindAddress", "spark.driver.host", "spark.local.dir"} & set(
        builder.conf
    )
    assert builder.conf["spark.ui.killEnabled"] == "false"
    assert "SPARK_LOCAL_IP" not in builder.environ_at_start


def test_context_conf_wins_over_every_default(builder: RecordingBuilder) -> None:
    mine = {
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.host": "10.1.2.3",
        "spark.local.dir": "/scratch",
        "spark.ui.killEnabled": "true",
    }
    context_start.start_context("local[*]", "app", mine, scratch_dir="/private/x")
    assert {key: builder.conf[key] for key in mine} == mine
    assert "SPARK_LOCAL_DIRS" not in builder.environ_at_start


def test_the_users_spark_local_ip_and_local_dirs_win(
    builder: RecordingBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.1.2.3")
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/scratch")
    context_start.start_context("local[*]", "app", {}, scratch_dir="/private/x")
    assert not {"spark.driver.bindAddress", "spark.driver.host", "spark.local.dir"} & set(
        builder.conf
    )
    assert builder.environ_at_start["SPARK_LOCAL_IP"] == "10.1.2.3"
    assert builder.environ_at_start["SPARK_LOCAL_DIRS"] == "/scratch"
    assert os.environ["SPARK_LOCAL_IP"] == "10.1.2.3"  # left as the user set it


def test_local_connect_server_gets_the_same_defaults(
    builder: RecordingBuilder, tmp_path: Any
) -> None:
    from jupyter_spark_sessions.backends.local_connect_server import LocalConnectServer

    server = LocalConnectServer("local[2]", {"spark.ui.killEnabled": "true"}, tmp_path, 1.0)
    conf = server._conf
    assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.local.dir"] == str(tmp_path / ".connect-scratch")
    assert conf["spark.ui.killEnabled"] == "true"  # connect_conf wins
    assert local_master.local_master_env("local[2]") == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert local_master.local_master_env("spark://host:7077") == {}


def test_the_driver_logs_through_the_quiet_config_unless_the_user_has_one(
    builder: RecordingBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    context_start.start_context("local[2]", "app", {}, scratch_dir="/private/x")
    opts = builder.environ_at_start["SPARK_SUBMIT_OPTS"]
    assert opts == f"-Dmine=1 -Dlog4j2.configurationFile={context_start.LOG_CONFIG.as_uri()}"
    assert context_start.LOG_CONFIG.is_file()
    assert "org.apache.spark.scheduler.TaskSetManager" in context_start.LOG_CONFIG.read_text()
    assert os.environ["SPARK_SUBMIT_OPTS"] == "-Dmine=1"  # restored after the launch

    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert context_start.quiet_logging_env({}) == {}
    monkeypatch.delenv("SPARK_CONF_DIR")
    java_opts = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=file:/x"}
    assert context_start.quiet_logging_env(java_opts) == {}


@pytest.mark.parametrize("master", ["local[2]", "spark://host:7077"])
def test_the_drivers_temp_folder_is_private_on_every_master(
    builder: RecordingBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, master: str
) -> None:
    # Spark's artifact folder (its copies of the sessions' files) is made in the
    # driver's java.io.tmpdir: a folder in the kernel's, made 0700, quoted (a space).
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    folder = tmp_path / "kernel folder" / ".spark-java-tmp"
    folder.parent.mkdir()
    context_start.start_context(master, "app", {}, java_tmp_dir=str(folder))
    opts = builder.environ_at_start["SPARK_SUBMIT_OPTS"]
    assert opts.endswith(f' "-Djava.io.tmpdir={folder}"'), opts
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    assert "SPARK_SUBMIT_OPTS" not in os.environ  # only for the launch


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("SPARK_SUBMIT_OPTS", "-Djava.io.tmpdir=/mine"),
        ("JAVA_TOOL_OPTIONS", "-Djava.io.tmpdir=/mine"),
        ("spark.driver.extraJavaOptions", "-Djava.io.tmpdir=/mine"),
    ],
)
def test_the_users_own_java_temp_folder_wins(
    builder: RecordingBuilder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    where: str,
    value: str,
) -> None:
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    conf = {where: value} if where.startswith("spark.") else {}
    if not conf:
        monkeypatch.setenv(where, value)
    folder = tmp_path / ".spark-java-tmp"
    context_start.start_context("local[2]", "app", conf, java_tmp_dir=str(folder))
    assert "-Djava.io.tmpdir=" + str(folder) not in builder.environ_at_start.get(
        "SPARK_SUBMIT_OPTS", ""
    )
    assert not folder.exists()

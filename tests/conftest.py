"""Shared fixtures: a real kernel with the extension loaded, on a real PySpark JVM, and a
real Spark standalone cluster (a master and two workers) started from the installed
PySpark."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernel_driver import Kernel

# Executors' Python workers must be this interpreter (it has pyarrow and the package).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

SPARK_TEST_CONF = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
)


def start_extension_kernel(
    tmp_path_factory: pytest.TempPathFactory, config: str, env: dict[str, str] | None = None
) -> Kernel:
    """A kernel whose IPython profile holds ``config``, with jupyter_spark_sessions loaded
    (``env``: more environment variables for the kernel)."""
    profile = tmp_path_factory.mktemp("ipython")
    (profile / "profile_default").mkdir()
    (profile / "profile_default" / "ipython_config.py").write_text(config)
    k = Kernel(
        env={"IPYTHONDIR": str(profile), **(env or {})},
        cwd=str(tmp_path_factory.mktemp("cwd")),
    )
    k.ok("%load_ext jupyter_spark_sessions")
    return k


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """A kernel with jupyter_spark_sessions loaded; one per test module (one JVM)."""
    k = start_extension_kernel(tmp_path_factory, SPARK_TEST_CONF)
    yield k
    k.shutdown()


# -- a real Spark standalone cluster ---------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pyspark_home() -> Path:
    """The installed PySpark's folder (it holds bin/spark-class and jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    """A running standalone master with its workers, all on 127.0.0.1."""

    url: str  # spark://127.0.0.1:PORT, the master URL drivers use
    webui_url: str  # http://127.0.0.1:PORT, the master's web UI
    log_dir: Path
    #: Seconds from launching the master until it listed every worker ALIVE.
    start_seconds: float = 0.0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        """The master's state as its web UI's JSON reports it (workers, applications)."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as reply:
            data: dict[str, Any] = json.load(reply)
            return data

    def alive_workers(self) -> list[dict[str, Any]]:
        try:
            workers = self.status().get("workers", [])
        except OSError:
            return []
        return [w for w in workers if w.get("state") == "ALIVE"]

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of every process's log, to explain a failure."""
        parts = []
        for name in self.processes:
            path = self.log_dir / f"{name}.log"
            text = path.read_text(errors="replace") if path.exists() else "(no log)"
            exit_code = self.processes[name].poll()
            state = "running" if exit_code is None else f"exited with {exit_code}"
            tail = "\n".join(text.splitlines()[-lines:])
            parts.append(f"--- {name} ({state}), {path}:\n{tail}")
        return "\n".join(parts)


def _stop_process(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    # Each daemon was started in its own session: its process group holds the JVM and,
    # for a worker, the executor JVMs it launched. Only these groups are signalled.
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    except ProcessLookupError:
        pass


@contextmanager
def standalone_cluster_running(
    base: Path, workers: int = 2, timeout: float = 180
) -> Iterator[StandaloneCluster]:
    """Start ``bin/spark-class ...Master`` and ``workers`` ``...Worker`` daemons (one core,
    1 GiB each, their own SPARK_WORKER_DIR under ``base``, logs in ``base``/logs), wait
    until the master lists them ALIVE, and stop them all afterwards. Fails with the logs'
    tails when they do not come up within ``timeout``."""
    spark_class = pyspark_home() / "bin" / "spark-class"
    log_dir = base / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    port, webui_port = free_port(), free_port()
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(pyspark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(log_dir),
        PYSPARK_PYTHON=env.get("PYSPARK_PYTHON", sys.executable),
    )
    cluster = StandaloneCluster(
        url=f"spark://127.0.0.1:{port}",
        webui_url=f"http://127.0.0.1:{webui_port}",
        log_dir=log_dir,
    )

    def launch(name: str, args: list[str], extra_env: dict[str, str]) -> None:
        with open(log_dir / f"{name}.log", "wb") as log:
            cluster.processes[name] = subprocess.Popen(
                ["bash", str(spark_class), *args],
                env={**env, **extra_env},
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    started = time.monotonic()
    try:
        launch(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(webui_port),
            ],
            {},
        )
        for number in range(1, workers + 1):
            work_dir = base / f"worker{number}"
            work_dir.mkdir(exist_ok=True)
            launch(
                f"worker{number}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    cluster.url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work_dir),
                ],
                {"SPARK_WORKER_DIR": str(work_dir)},
            )
        deadline = started + timeout
        while len(cluster.alive_workers()) < workers:
            exited = [n for n, p in cluster.processes.items() if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                why = f"{', '.join(exited)} exited" if exited else f"not up within {timeout} s"
                pytest.fail(
                    f"Standalone cluster {cluster.url}: {why}; ALIVE workers: "
                    f"{len(cluster.alive_workers())} of {workers}.\n{cluster.log_tail()}",
                    pytrace=False,
                )
            time.sleep(0.5)
        cluster.start_seconds = time.monotonic() - started
        yield cluster
    finally:
        for name in reversed(list(cluster.processes)):  # workers first, then the master
            _stop_process(cluster.processes[name])


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A real standalone cluster (a master, two one-core workers) for the whole test run;
    started the first time a test asks for it."""
    with standalone_cluster_running(tmp_path_factory.mktemp("standalone")) as cluster:
        yield cluster

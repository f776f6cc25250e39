"""The server extension removes what this user's ended kernels left (issue 40, item
4): at the server's start, the Spark UI secret files whose kernel's connection file is
gone; at its exit, after it shut its kernels down, the private folder and the secret
file of a kernel that was killed (as a JupyterHub stopping the server kills them), and
never a file of a kernel whose connection file is still there. Through a real
``jupyter server`` and a real kernel (no Spark needed: the folder and the file are made
by the same functions a session's start calls)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
import pytest
from e2e.waiting import wait_until
from test_spark_ui_proxy import JupyterServer

from jupyter_spark_sessions.backends.local_master import UI_SECRET_FILE
from kernel_driver import Kernel

pytestmark = [pytest.mark.kernel]


def plant_secret(folder: Path, port: int, connection_file: str) -> Path:
    path = folder / UI_SECRET_FILE.format(port=port)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"port": port, "secret": "s", "connection_file": connection_file}, out)
    return path


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_ended_kernels_leftovers_go_at_the_servers_start_and_exit(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    orphan = plant_secret(runtime, 1, "kernel-gone.json")
    (runtime / "kernel-alive.json").write_text("{}")
    kept = plant_secret(runtime, 2, "kernel-alive.json")

    # A temp directory of its own: every kernel and server of the other tests running
    # beside this one removes dead kernels' folders from the system's temp directory,
    # and would take the killed kernel's folder before this test looks at it.
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o700)
    server = JupyterServer(tmp_path, extra_env={"TMPDIR": str(temp)})
    assert not orphan.exists(), "removed at the server's start"
    assert kept.exists(), "its connection file is there: a live kernel's"

    kernel_id = server.api("POST", "api/kernels", {"name": "python3"})["id"]
    connection_file = server.runtime_dir / f"kernel-{kernel_id}.json"
    wait_until(connection_file.exists, 60, 0.1)
    kernel = Kernel.attach(str(connection_file))
    try:
        kernel.ok(
            "import os\n"
            "from jupyter_spark_sessions.session_root import KernelRoot\n"
            "from jupyter_spark_sessions.backends.local_master import write_ui_secret\n"
            "_root = KernelRoot()\n"
            "_root.make_dir('a')\n"
            "_secret = write_ui_secret('http://127.0.0.1:4999', 'the-secret')"
        )
        folder = Path(kernel.value("str(_root.path())"))
        secret = Path(kernel.value("str(_secret)"))
        pid = kernel.value("os.getpid()")
    finally:
        kernel.close()
    assert folder.is_dir() and secret.parent == server.runtime_dir, (folder, secret)
    assert folder.parent == temp, folder
    assert folder.name.startswith(f"jupyter_spark_sessions-{pid}-")

    # Killed: its own shutdown never runs, so its files stay while the server runs.
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: gone(pid), 30, 0.1)
    assert folder.is_dir() and secret.exists()

    server.process.send_signal(signal.SIGTERM)  # how a hub (or Ctrl-C) stops a server
    server.process.wait(60)
    assert not folder.exists(), "the killed kernel's folder is removed at the server's exit"
    assert not secret.exists(), "and its UI secret file"
    assert kept.exists()

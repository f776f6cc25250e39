"""The processes of a shared driver (``--remote shared``) that tests count and clean up:
its server JVMs, found by the rendezvous folder their command line names (the keeper's
heartbeat file), and the kill of what a record names when a test ends."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous, ServerRecord


def server_jvms(runtime: Path) -> list[psutil.Process]:
    """The Java processes of the shared servers of the rendezvous folder ``runtime``."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] == "java" and str(runtime) in " ".join(
            process.info["cmdline"] or []
        ):
            found.append(process)
    return found


def kill_recorded_server(runtime: Path, record: ServerRecord | None = None) -> None:
    """kill -9 of the server and keeper that ``record`` (by default ``runtime``'s record)
    names, if either still runs: never leave a server behind, whatever a test left."""
    record = record or Rendezvous(runtime).read()
    if record is not None:
        for pid in (record.server_pid, record.keeper.pid):
            if pid and psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)

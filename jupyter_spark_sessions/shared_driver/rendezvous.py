"""Where the notebooks of one user meet their shared Spark Connect server.

Everything is a file in the user's Jupyter runtime directory (or
``SparkSessionsConfig.shared_driver_dir``), each 0600 and read only when it is this
user's and private:

- ``jss-shared-driver.lock``: taken (``flock``) for every change below, so a notebook
  that arrives while the server stops sees it gone and starts a new one;
- ``jss-shared-driver.json``: the server (its keeper's process, state, URL with the
  token, master, UI port and secret); absent when none runs or while one stops;
- ``jss-shared-driver-<id>/leases/<pid>.json``: a kernel's lease on server ``<id>``
  (its process, its Jupyter server's process, its notebook and kernel id, and the
  sessions it has there). The keeper releases the sessions of a kernel that is gone.
- ``jss-shared-driver-<id>/keeper.heartbeat``: touched by the keeper every second; the
  server ends itself once it stays unchanged for a while (``jss.KeeperWatch``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from ..session_root import read_private_json, write_private_json

RECORD = "jss-shared-driver.json"
LOCK = "jss-shared-driver.lock"
FOLDER = "jss-shared-driver-{id}"
HEARTBEAT = "keeper.heartbeat"
#: Written by the keeper when its server died: how, in a few words (read by the
#: notebooks' sessions: ``Endpoint.end_note_path``).
END_NOTE = "server-ended"

STARTING, RUNNING, FAILED = "starting", "running", "failed"


def base_dir(configured: str = "") -> Path:
    """The folder of the rendezvous (made 0700 if missing)."""
    if configured:
        path = Path(configured)
    else:
        from jupyter_core.paths import jupyter_runtime_dir

        path = Path(jupyter_runtime_dir())
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Process:
    """A process, told apart from a later one that reuses its pid by its start time."""

    pid: int
    started: float

    @classmethod
    def of(cls, pid: int) -> Process:
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return cls(pid, 0.0)

    def alive(self) -> bool:
        try:
            process = psutil.Process(self.pid)
            same = abs(process.create_time() - self.started) < 0.01
            return bool(same and process.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            return False


@dataclass
class ServerRecord:
    """``jss-shared-driver.json``: the shared server and its keeper."""

    id: str
    keeper: Process
    state: str  # STARTING or RUNNING
    master: str
    started_at: float
    url: str = ""  # sc://localhost:PORT/;token=... (RUNNING)
    port: int = 0
    ui_port: int = 0
    ui_secret: str = ""
    server_pid: int = 0
    server_started: float = 0.0  # the server process's start time (``Process``)
    idle_timeout: float = 0.0  # seconds it runs on with no session (its keeper's)
    error: str = ""  # state "failed": why, in one line

    @property
    def folder_name(self) -> str:
        return FOLDER.format(id=self.id)

    @property
    def server(self) -> Process:
        """The server's JVM (RUNNING)."""
        return Process(self.server_pid, self.server_started)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerRecord:
        data = dict(data)
        data["keeper"] = Process(**data["keeper"])
        return cls(**data)


@dataclass
class Lease:
    """A kernel's hold on the shared server: the sessions it has there."""

    kernel: Process
    parent: Process  # its Jupyter server (or nbclient, papermill ...)
    kernel_id: str = ""
    notebook: str = ""
    #: session name -> {"session_id", "user_id", "pool"}
    sessions: dict[str, dict[str, str]] = field(default_factory=dict)
    #: A kernel still making its first session holds the server until then.
    joining_until: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lease:
        data = dict(data)
        data["kernel"] = Process(**data["kernel"])
        data["parent"] = Process(**data["parent"])
        return cls(**data)


class Rendezvous:
    """The files of one user's shared server, under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the rendezvous' lock (between processes: ``flock``)."""
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    # -- the server record ---------------------------------------------------------------

    def read(self) -> ServerRecord | None:
        data = read_private_json(self.folder / RECORD)
        try:
            return ServerRecord.from_json(data) if data else None
        except (TypeError, KeyError):
            return None

    def write(self, record: ServerRecord) -> None:
        write_private_json(self.folder / RECORD, record.to_json())

    def remove_if(self, record_id: str) -> None:
        """Remove the record if it is still server ``record_id``'s."""
        current = self.read()
        if current is not None and current.id == record_id:
            (self.folder / RECORD).unlink(missing_ok=True)

    def server_folder(self, record: ServerRecord) -> Path:
        return self.folder / record.folder_name

    def heartbeat_path(self, record: ServerRecord) -> Path:
        return self.server_folder(record) / HEARTBEAT

    # -- leases --------------------------------------------------------------------------

    def lease_path(self, record: ServerRecord, pid: int) -> Path:
        return self.server_folder(record) / "leases" / f"{pid}.json"

    def write_lease(self, record: ServerRecord, lease: Lease) -> None:
        path = self.lease_path(record, lease.kernel.pid)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private_json(path, lease.to_json())

    def remove_lease(self, record: ServerRecord, pid: int) -> None:
        self.lease_path(record, pid).unlink(missing_ok=True)

    def leases(self, record: ServerRecord) -> list[Lease]:
        folder = self.server_folder(record) / "leases"
        found = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            data = read_private_json(path)
            try:
                found.append(Lease.from_json(data or {}))
            except (TypeError, KeyError):
                continue
        return found


def new_id() -> str:
    return secrets.token_hex(6)

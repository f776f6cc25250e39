"""A kernel's side of the shared Spark Connect server (``--remote shared``): join the
server of this user, or start it when none runs (waiting only for that start), and
keep a lease that names this kernel's sessions there, so that its keeper knows what to
release when the kernel is gone and when nothing needs the server any more.

A kernel that finds the keeper gone while its server runs (the keeper was killed) starts
a keeper that takes the server over, under the rendezvous' lock so only one does: on
joining, and every ``KEEPER_LOOK`` seconds while it holds a lease. The sessions of every
notebook live on; nothing to reconnect.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..backends.connect_endpoint import Endpoint
from ..backends.java_runtime import require_java
from ..backends.jvm_reaper import reap_when_it_exits
from ..backends.local_connect_server import SERVER_LOG
from ..backends.local_master import tasks_run_in_driver, workers_on_this_machine
from ..config import SparkSessionsConfig
from ..errors import ConnectError
from ..session_root import open_private
from .rendezvous import (
    END_NOTE,
    FAILED,
    FOLDER,
    RUNNING,
    STARTING,
    Lease,
    Process,
    Rendezvous,
    ServerRecord,
    base_dir,
    new_id,
)

log = logging.getLogger(__name__)

#: Seconds a kernel that joined holds the server while it makes its first session.
JOINING_HOLD = 120.0
#: Seconds between a member kernel's looks at its server's keeper.
KEEPER_LOOK = 2.0
#: Seconds the folder of a server that failed or was killed is kept (its logs).
KEPT_LOGS = 24 * 3600.0
#: Environment a kernel must not hand its keeper (PySpark's per-process Connect switch).
_NOT_INHERITED = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


class SharedDriverMembership:
    """This kernel's membership of its user's shared Spark Connect server."""

    def __init__(self, config: SparkSessionsConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._record: ServerRecord | None = None
        self._sessions: dict[str, dict[str, str]] = {}
        self._kernel = Process.of(os.getpid())
        self._parent = Process.of(os.getppid())
        self._watching = False

    @property
    def rendezvous(self) -> Rendezvous:
        return Rendezvous(base_dir(self.config.shared_driver_dir))

    @property
    def record(self) -> ServerRecord | None:
        """The server this kernel joined last, if any."""
        return self._record

    def pool_name(self, session: str) -> str:
        """A scheduler pool of its own for ``session`` of this kernel (names are the
        server's, across every notebook)."""
        return f"{session}@{kernel_key()}"

    def endpoint(self, progress: Callable[[str], None]) -> Endpoint:
        """The shared server: joined, or started by this kernel when none runs (or the
        one that runs is stopping). Blocks only while a server starts."""
        rendezvous = self.rendezvous
        deadline = time.monotonic() + self.config.connect_start_timeout + 30
        started_here = waited = False
        began = time.monotonic()
        while True:
            with rendezvous.locked():
                record = rendezvous.read()
                if record is not None and not record.keeper.alive() and adoptable(record):
                    self._adopt(rendezvous, record)
                if record is None or not record.keeper.alive():
                    if record is not None and record.state == FAILED and started_here:
                        raise ConnectError(_failed_line(rendezvous, record))
                    record = self._start(rendezvous)
                    started_here = True
                    progress(
                        f"Starting the shared Spark driver ({record.master}) for this "
                        "user's notebooks (a few seconds; the others will join it) ..."
                    )
                if record.state == RUNNING:
                    self._record = record
                    self._write_lease(rendezvous, record, joining=True)
                    self._watch_keeper()
                    if started_here or waited:
                        progress(f"Shared Spark driver ready ({time.monotonic() - began:.0f} s).")
                    return endpoint_of(record, rendezvous)
                if record.state == FAILED:
                    raise ConnectError(_failed_line(rendezvous, record))
            if not started_here and not waited:
                progress("Waiting for the shared Spark driver (another notebook starts it) ...")
            waited = True
            if time.monotonic() > deadline:
                raise ConnectError(
                    "The shared Spark driver did not start in time (log: "
                    f"{rendezvous.server_folder(record) / SERVER_LOG})."
                )
            time.sleep(0.2)

    def prewarm(self, starter: Process) -> ServerRecord | None:
        """Start the server for notebooks to come (``server/prewarm``), unless one runs or
        starts; ``starter`` (the Jupyter server) counts as a process that uses it. The
        new record, or None when there was one."""
        rendezvous = self.rendezvous
        with rendezvous.locked():
            record = rendezvous.read()
            if record is not None and not record.keeper.alive() and adoptable(record):
                self._adopt(rendezvous, record)
                return None
            if record is not None and record.keeper.alive():
                return None
            return self._start(rendezvous, starter, warm_up=True)

    def _start(
        self, rendezvous: Rendezvous, starter: Process | None = None, warm_up: bool = False
    ) -> ServerRecord:
        """Start a keeper (and through it a server); called under the lock. ``starter``:
        the process its first user runs in (default: this kernel's Jupyter server)."""
        require_java()
        unreachable = unreachable_master(self.config.shared_driver_master)
        if unreachable:
            raise ConnectError(unreachable)
        for old in rendezvous.folder.glob(FOLDER.format(id="*")):
            # A server that failed or was killed keeps its folder (its logs) for a day.
            if time.time() - old.stat().st_mtime > KEPT_LOGS:
                shutil.rmtree(old, ignore_errors=True)
        record = ServerRecord(
            id=new_id(),
            keeper=Process(0, 0.0),
            state=STARTING,
            master=self.config.shared_driver_master,
            started_at=time.time(),
            idle_timeout=self.config.shared_driver_idle_timeout,
        )
        folder = rendezvous.server_folder(record)
        folder.mkdir(mode=0o700)
        record.keeper = self._spawn_keeper(
            rendezvous, record, adopt=False, starter=starter, warm_up=warm_up
        )
        rendezvous.write(record)
        return record

    def _adopt(self, rendezvous: Rendezvous, record: ServerRecord) -> None:
        """Start a keeper that takes over ``record``'s running server, whose keeper died
        (called under the lock: one kernel does)."""
        record.keeper = self._spawn_keeper(rendezvous, record, adopt=True)
        rendezvous.write(record)

    def _spawn_keeper(
        self,
        rendezvous: Rendezvous,
        record: ServerRecord,
        adopt: bool,
        starter: Process | None = None,
        warm_up: bool = False,
    ) -> Process:
        command = [
            sys.executable,
            "-m",
            "jupyter_spark_sessions.shared_driver.keeper",
            "--dir",
            str(rendezvous.folder),
            "--id",
            record.id,
            "--conf",
            json.dumps(dict(self.config.shared_driver_conf)),
            "--idle-timeout",
            str(self.config.shared_driver_idle_timeout),
            "--start-timeout",
            str(self.config.connect_start_timeout),
            "--restart-grace",
            str(self.config.shared_driver_restart_grace),
            *(["--adopt"] if adopt else []),
            *(["--starter", str(starter.pid)] if starter is not None else []),
            *(["--warm-up"] if warm_up else []),
        ]
        env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        folder = rendezvous.server_folder(record)
        # One log for the server's keepers: a takeover's follows its predecessor's.
        with open_private(folder / "keeper.log", append=adopt) as log_file:
            keeper = subprocess.Popen(
                command,
                env=env,
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives this kernel and its Interrupts
            )
        reap_when_it_exits(keeper)
        return Process.of(keeper.pid)

    def _watch_keeper(self) -> None:
        """While this kernel is a member, look at its server's keeper every few seconds
        and take the server over when the keeper is gone (one thread, started once)."""
        if self._watching:
            return
        self._watching = True
        threading.Thread(target=self._keeper_watch, name="jss-keeper-watch", daemon=True).start()

    def _keeper_watch(self) -> None:
        while True:
            time.sleep(KEEPER_LOOK)
            record = self._record
            if record is None or record.keeper.alive():
                continue
            try:
                rendezvous = self.rendezvous
                with rendezvous.locked():
                    current = rendezvous.read()
                    if current is None or current.id != record.id:
                        continue  # stopped or replaced: the next create finds out
                    if not current.keeper.alive() and adoptable(current):
                        self._adopt(rendezvous, current)
                    if self._record is not None and self._record.id == current.id:
                        self._record = current
            except Exception:  # a kernel's background thread must not die loudly
                log.warning("Could not look after the shared driver's keeper.", exc_info=True)

    # -- the lease -------------------------------------------------------------------------

    def hold(self, name: str, session_id: str, user_id: str, pool: str) -> None:
        """Session ``name`` of this kernel now lives on the shared server."""
        with self._lock:
            server = self._record.id if self._record is not None else ""
            self._sessions[name] = {
                "session_id": session_id,
                "user_id": user_id,
                "pool": pool,
                "server": server,
            }
            self._update()

    def drop(self, name: str, session_id: str) -> None:
        """Session ``name`` (``session_id``) was released: no longer held (a session of
        the same name made since stays)."""
        with self._lock:
            held = self._sessions.get(name)
            if held is not None and held["session_id"] == session_id:
                del self._sessions[name]
                self._update()

    def leave(self) -> None:
        """Kernel shutdown: give up a lease that holds no session. One that still names
        sessions stays: the keeper releases them once this process has exited (again,
        harmlessly, for those the shutdown released in time)."""
        with self._lock:
            record, self._record = self._record, None
            if record is not None and not self._held_on(record):
                rendezvous = self.rendezvous
                with rendezvous.locked():
                    rendezvous.remove_lease(record, self._kernel.pid)

    def _held_on(self, record: ServerRecord) -> dict[str, dict[str, str]]:
        # Sessions of a server that died (not reconnected yet) are not this one's.
        return {n: s for n, s in self._sessions.items() if s.get("server") == record.id}

    def _update(self) -> None:
        if self._record is not None:
            rendezvous = self.rendezvous
            with rendezvous.locked():
                self._write_lease(rendezvous, self._record, joining=False)

    def _write_lease(self, rendezvous: Rendezvous, record: ServerRecord, joining: bool) -> None:
        lease = Lease(
            kernel=self._kernel,
            parent=self._parent,
            kernel_id=kernel_id(),
            notebook=os.environ.get("JPY_SESSION_NAME", ""),
            sessions=self._held_on(record),
            joining_until=time.time() + JOINING_HOLD if joining else 0.0,
        )
        rendezvous.write_lease(record, lease)


def unreachable_master(master: str, timeout: float = 2.0) -> str:
    """Why a standalone master (``spark://HOST:PORT[,HOST:PORT]``) cannot be used: none of
    its addresses takes a connection within ``timeout``; "" when one does, or for any
    other master (Spark's own start says what is wrong with those)."""
    import socket
    from urllib.parse import urlsplit

    if not master.startswith("spark://"):
        return ""
    tried = []
    for address in master[len("spark://") :].split(","):
        parts = urlsplit(f"spark://{address}")
        try:
            host, port = parts.hostname or "", parts.port or 7077
        except ValueError:
            return f"shared_driver_master {master!r} is not a Spark master URL (spark://HOST:PORT)."
        try:
            socket.create_connection((host, port), timeout).close()
            return ""
        except OSError as exc:
            tried.append(f"{host}:{port} ({exc.strerror or exc})")
    return (
        f"The shared Spark driver's master {master} does not answer: {', '.join(tried)}. "
        "Start it, or set c.SparkSessionsConfig.shared_driver_master."
    )


def adoptable(record: ServerRecord) -> bool:
    """Whether ``record``'s server runs on (its keeper died): a new keeper can take it
    over, sessions and all."""
    return record.state == RUNNING and bool(record.server_started) and record.server.alive()


def endpoint_of(record: ServerRecord, rendezvous: Rendezvous) -> Endpoint:
    """Where a running shared server listens (its URL carries the token)."""
    return Endpoint(
        record.url,
        "localhost",
        record.port,
        ui_url=f"http://127.0.0.1:{record.ui_port}" if record.ui_port else "",
        ui_protected=bool(record.ui_secret),
        ui_secret=record.ui_secret,
        # Its workers run here for a local master or a standalone one on this machine (as
        # for a kernel's own context): a session's packages are then used by path.
        local=workers_on_this_machine(record.master),
        shared=True,
        tasks_in_server=tasks_run_in_driver(record.master),
        end_note_path=str(rendezvous.server_folder(record) / END_NOTE),
        log_path=str(rendezvous.server_folder(record) / SERVER_LOG),
    )


def kernel_id() -> str:
    """This kernel's id, from its connection file's name ("" outside a Jupyter kernel)."""
    try:
        from ipykernel.connect import get_connection_file

        stem = Path(get_connection_file()).stem
    except Exception:
        return ""
    return stem[len("kernel-") :] if stem.startswith("kernel-") else stem


def kernel_key() -> str:
    """A short name of this kernel, unique on the machine while it runs."""
    return (kernel_id() or str(os.getpid()))[:8]


def _failed_line(rendezvous: Rendezvous, record: ServerRecord) -> str:
    log = rendezvous.server_folder(record) / SERVER_LOG
    why = record.error.rstrip(".")
    where = "" if "(log: " in why else f" (log: {log})"
    return f"The shared Spark driver did not start: {why}{where}."

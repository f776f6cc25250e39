"""The owner of a user's shared Spark Connect server: a small process that starts the
server as its child, and alone decides when it stops.

    python -m jupyter_spark_sessions.shared_driver.keeper --dir DIR --id ID ...

The first kernel that asks for ``--remote shared`` starts it, detached (it outlives
that kernel). Every second it looks at the leases of its kernels (``rendezvous``):

- a kernel that is gone (shut down, restarted, killed) has its sessions released on
  the server (``ReleaseSession``: their operations, files and views go);
- it stops the server when no kernel has a session there and either every Jupyter
  server (or nbclient, papermill ...) whose kernels used it has exited (``RESTART_GRACE``
  seconds ago: a restarted Jupyter server's notebooks join the running server), or no
  session was there for ``--idle-timeout`` seconds. It first removes the server's record under
  the rendezvous' lock: a notebook that arrives then starts a new server, and never
  joins the dying one. SIGTERM stops it too.

The server outlives its keeper: a keeper killed outright (kill -9, the OOM killer)
leaves every notebook's sessions running, and the first kernel that finds it gone starts
a keeper that takes the server over (``--adopt``, under the rendezvous' lock:
``membership``). The keeper touches a heartbeat file every second; a server no keeper
looked after for ``GRACE`` seconds ends itself (``jss.KeeperWatch``), so a keeper killed
with every kernel leaves no Java process behind.

Running outside every Jupyter server, it serves kernels of nbclient or papermill the
same way. Its log and the server's are in the server's folder of the rendezvous.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from ..backends import driver_jar
from ..backends.connect import release_session
from ..backends.connect_endpoint import out_of_memory_in
from ..backends.local_connect_server import SERVER_LOG, LocalConnectServer
from ..session_root import open_private
from . import warm_up as warm_up_module
from .rendezvous import END_NOTE, FAILED, RUNNING, Lease, Process, Rendezvous, ServerRecord

log = logging.getLogger("jupyter_spark_sessions.shared_driver")

#: Seconds between two looks at the leases (the bound on releasing a killed kernel's
#: sessions, said in docs/connect.md).
CHECK_INTERVAL = 1.0
#: Seconds a server runs on without a keeper's heartbeat (a kernel takes it over
#: within a few; none left: it ends itself).
GRACE = 60.0
#: Seconds the server waits, once every Jupyter server that used it exited, for one to
#: come back (a restart: its notebooks join the running server) before it stops
#: (``shared_driver_restart_grace``).
RESTART_GRACE = 30.0
#: The listener (in the project's jar, on the driver only) that ends a server nobody keeps.
KEEPER_WATCH = "jss.KeeperWatch"


class Keeper:
    """Runs one shared server until nothing needs it."""

    def __init__(
        self,
        rendezvous: Rendezvous,
        record: ServerRecord,
        conf: dict[str, str],
        idle_timeout: float,
        start_timeout: float,
        starter: Process | None = None,
        adopt: bool = False,
        warm_up: bool = False,
        restart_grace: float = RESTART_GRACE,
    ) -> None:
        self.rendezvous = rendezvous
        self.record = record
        self.idle_timeout = idle_timeout
        self.heartbeat = rendezvous.heartbeat_path(record)
        self.server: LocalConnectServer | AdoptedServer
        if adopt:
            self.server = AdoptedServer(record.server)
        else:
            self.server = LocalConnectServer(
                record.master,
                watched_conf(conf, self.heartbeat),
                rendezvous.server_folder(record),
                start_timeout,
                publishes_ui_secret=True,  # in the record, read by the user's Jupyter servers
                dies_with_parent=False,  # outlives this keeper: see above
            )
        self.warm_up = warm_up
        self.restart_grace = restart_grace
        #: Since when every known Jupyter server is gone (monotonic), None while one runs.
        self._parents_gone_since: float | None = None
        self._stop = threading.Event()
        # Jupyter servers whose kernels came: from the first, ``starter``, the starting
        # kernel's (one that leaves before the first look at the leases counts too).
        self._parents: set[Process] = {starter} if starter is not None else set()
        self._last_used = time.monotonic()

    def run(self) -> int:
        # Beats from a thread of their own: also while the server starts and warms up.
        threading.Thread(target=self._beat_until_stopped, name="heartbeat", daemon=True).start()
        if isinstance(self.server, AdoptedServer):
            log.info("Took over the shared Spark Connect server %s.", self.record.id)
            return self.keep(self.record)
        try:
            endpoint = self.server.start()
        except Exception as exc:  # the waiting kernels read why, in one line
            with self.rendezvous.locked():
                current = self.rendezvous.read()
                if current is not None and current.id == self.record.id:
                    current.state, current.error = FAILED, str(exc).splitlines()[0]
                    self.rendezvous.write(current)
            log.error("The shared Spark Connect server did not start: %s", exc)
            return 1
        if self.warm_up:
            self.run_first_query(endpoint.url)
        with self.rendezvous.locked():
            current = self.rendezvous.read()
            if current is None or current.id != self.record.id:
                self.server.stop()  # replaced while starting: not ours to run
                return 0
            record = self.record
            record.state, record.url, record.port = RUNNING, endpoint.url, endpoint.port
            record.ui_port = _port_of(endpoint.ui_url)
            record.ui_secret = self.server.ui_secret
            record.server_pid = self.server.pid or 0
            record.server_started = Process.of(record.server_pid).started
            record.started_at = current.started_at
            self.rendezvous.write(record)
        log.info("Shared Spark Connect server %s runs on port %s", record.id, record.port)
        return self.keep(record)

    def keep(self, record: ServerRecord) -> int:
        """Look after the running server until nothing needs it (or it died)."""
        self._last_used = time.monotonic()  # idle from when it could be used
        crashed = False
        try:
            while not self._stop.wait(CHECK_INTERVAL):
                if not self.server.alive:
                    folder = self.rendezvous.server_folder(record)
                    why = end_of(self.server.exit_code, folder / SERVER_LOG)
                    log.error("The shared Spark Connect server %s.", why)
                    # What the notebooks' next cells say (endpoint_of: end_note_path).
                    write_end_note(folder / END_NOTE, why)
                    crashed = True
                    with self.rendezvous.locked():
                        self.rendezvous.remove_if(record.id)
                    break
                if self.check_leases():
                    break
        finally:
            with self.rendezvous.locked():
                self.rendezvous.remove_if(record.id)  # newcomers start a new server
            self.server.stop()
            log.info("Shared Spark Connect server %s stopped.", record.id)
            if not crashed:  # else its logs stay (for a day) to tell why
                shutil.rmtree(self.rendezvous.server_folder(record), ignore_errors=True)
        return 0

    def check_leases(self) -> bool:
        """Release the sessions of kernels that are gone; True when the server is to stop
        (its record then already removed)."""
        gone: list[Lease] = []
        with self.rendezvous.locked():
            in_use = False
            now = time.time()
            for lease in self.rendezvous.leases(self.record):
                if not lease.kernel.alive():
                    gone.append(lease)
                    self.rendezvous.remove_lease(self.record, lease.kernel.pid)
                    continue
                self._parents.add(lease.parent)
                if lease.sessions or lease.joining_until > now:
                    in_use = True
            if in_use:
                self._last_used = time.monotonic()
            else:
                idle = time.monotonic() - self._last_used > self.idle_timeout
                parents_gone = self._parents_gone_long_enough()
                if idle or parents_gone:
                    why = "no session for the idle time" if idle else "its Jupyter servers exited"
                    log.info("Stopping the shared server: %s.", why)
                    self.rendezvous.remove_if(self.record.id)
                    return True
        if gone:
            self.release([s for lease in gone for s in lease.sessions.values()])
        return False

    def _parents_gone_long_enough(self) -> bool:
        """Every Jupyter server whose kernels used it exited, ``restart_grace`` ago."""
        if not self._parents or any(parent.alive() for parent in self._parents):
            self._parents_gone_since = None
            return False
        now = time.monotonic()
        if self._parents_gone_since is None:
            self._parents_gone_since = now
        return now - self._parents_gone_since >= self.restart_grace

    def release(self, sessions: Iterable[dict[str, str]]) -> None:
        """Release sessions of a kernel that is gone (best effort: its operations are
        interrupted and its state dropped by the server)."""
        for session in sessions:
            try:
                release_session(self.record.url, session["session_id"], session.get("user_id", ""))
                log.info("Released session %s of a kernel that is gone.", session["session_id"])
            except Exception as exc:  # the server may be going too
                log.warning("Could not release session %s: %s", session["session_id"], exc)

    def run_first_query(self, url: str) -> None:
        """Pre-warmed: the server's first query, before the record says it runs, so a
        notebook's first one comes in about a second (not the 3 s of a cold server's)."""
        began = time.monotonic()
        env = {**os.environ, warm_up_module.URL_VARIABLE: url}
        try:
            subprocess.run(
                [sys.executable, "-m", warm_up_module.__name__],
                env=env,
                stdin=subprocess.DEVNULL,
                check=True,
                timeout=120,
            )
            log.info("Warmed up in %.1f s.", time.monotonic() - began)
        except (OSError, subprocess.SubprocessError) as exc:  # still usable, only colder
            log.warning("The warm-up query failed: %s", exc)

    def _beat_until_stopped(self) -> None:
        self.beat()
        while not self._stop.wait(CHECK_INTERVAL):
            self.beat()

    def beat(self) -> None:
        """Tell the server a keeper looks after it (``jss.KeeperWatch``)."""
        try:
            os.close(os.open(self.heartbeat, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
            os.utime(self.heartbeat)
        except OSError as exc:  # its folder removed: the server ends after GRACE
            log.warning("Could not touch %s: %s", self.heartbeat, exc)

    def request_stop(self, *_: object) -> None:
        self._stop.set()


class AdoptedServer:
    """A running shared server whose keeper died, kept by this one: known by its
    process (in a process group of its own), stopped by signal."""

    def __init__(self, process: Process) -> None:
        self.process = process

    @property
    def alive(self) -> bool:
        return self.process.alive()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def exit_code(self) -> int | None:
        return None  # not this keeper's child: its code is not known here

    def stop(self, timeout: float = 10.0) -> None:
        import psutil  # type: ignore[import-untyped]

        if not self.alive:
            return
        try:
            java = psutil.Process(self.process.pid)
            os.killpg(self.process.pid, signal.SIGTERM)
            _, alive = psutil.wait_procs([java], timeout)
            if alive:
                os.killpg(self.process.pid, signal.SIGKILL)
        except (OSError, psutil.Error):  # it ended meanwhile
            pass


#: Spark's exit code for an out-of-memory error (``SparkExitCode.OOM``).
SPARK_OOM_EXIT = 52


def end_of(exit_code: int | None, server_log: Path) -> str:
    """How the server ended, in a few words: out of memory (with the JVM's line),
    killed by a signal, or its exit code."""
    memory = out_of_memory_in(server_log)
    if memory or exit_code == SPARK_OOM_EXIT:
        return f"ran out of memory ({memory or 'exit code 52'})"
    if exit_code is not None and exit_code < 0:
        try:
            return f"was killed ({signal.Signals(-exit_code).name})"
        except ValueError:  # a signal Python has no name for
            return f"was killed (signal {-exit_code})"
    return f"exited (code {exit_code})" if exit_code is not None else "exited"


def write_end_note(path: Path, why: str) -> None:
    try:
        with open_private(path) as out:
            out.write(why.encode())
    except OSError:  # the notebooks then say the server cannot be reached
        log.warning("Could not write %s.", path, exc_info=True)


def watched_conf(conf: dict[str, str], heartbeat: Path) -> dict[str, str]:
    """``conf`` with the watch that ends a server no keeper looks after."""
    watched = driver_jar.with_driver_listener(conf, KEEPER_WATCH)
    return {
        "spark.jss.keeperGraceSeconds": str(GRACE),  # the user's value wins
        **watched,
        "spark.jss.keeperHeartbeat": str(heartbeat),
    }


def starter_parent(given: int | None = None) -> Process:
    """The process of this keeper's first user: ``given`` (the Jupyter server that
    pre-warms the server), else the parent of the kernel that started it (its Jupyter
    server)."""
    import psutil

    try:
        return Process.of(given or psutil.Process(os.getppid()).ppid())
    except psutil.Error:
        return Process(0, 0.0)


def _port_of(url: str) -> int:
    from urllib.parse import urlsplit

    return (urlsplit(url).port or 0) if url else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True, help="the rendezvous folder")
    parser.add_argument("--id", required=True, help="the server's id in its record")
    parser.add_argument("--conf", default="{}", help="Spark settings (JSON object)")
    parser.add_argument("--idle-timeout", type=float, default=600.0)
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--restart-grace", type=float, default=RESTART_GRACE)
    parser.add_argument(
        "--adopt", action="store_true", help="take over the running server of a keeper that died"
    )
    parser.add_argument(
        "--starter", type=int, help="the process of its first user (default: the parent's parent)"
    )
    parser.add_argument(
        "--warm-up", action="store_true", help="run a first query before notebooks come"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )
    rendezvous = Rendezvous(Path(args.dir))
    with rendezvous.locked():
        record = rendezvous.read()
    if record is None or record.id != args.id:
        log.error("No shared server %s to start in %s.", args.id, args.dir)
        return 1
    if args.adopt and not (record.state == RUNNING and record.server.alive()):
        log.error("The shared server %s is not running: nothing to take over.", args.id)
        return 1
    keeper = Keeper(
        rendezvous,
        record,
        json.loads(args.conf),
        # A takeover keeps the idle time its server started with.
        (args.adopt and record.idle_timeout) or args.idle_timeout,
        args.start_timeout,
        starter=None if args.adopt else starter_parent(args.starter),
        adopt=args.adopt,
        warm_up=args.warm_up,
        restart_grace=args.restart_grace,
    )
    signal.signal(signal.SIGTERM, keeper.request_stop)
    signal.signal(signal.SIGINT, keeper.request_stop)
    return keeper.run()


if __name__ == "__main__":
    sys.exit(main())

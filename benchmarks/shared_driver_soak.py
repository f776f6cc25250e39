"""The shared driver under a day's use, shortened: many notebooks of one Jupyter server on
one shared Spark driver for a while, kernels restarted and shut down at random, and then
nothing left behind (issue 50, point 1).

A real Jupyter server (``shared_driver_prewarm``, master ``local[2]``: the driver runs
before any notebook, so its heap and threads with no notebook are measured first) opens
``--notebooks`` notebooks (10). Each makes two sessions on the shared driver (``--remote
shared``), adds its own ``lookup.csv`` to both (same name, its own text), and, in the
first two notebooks, starts a streaming query (a rate source into a memory table). Then,
for ``--minutes`` (60), each notebook runs a mix of cells one after the other, a thread
per notebook, each cell's result checked:

- a DataFrame job (a sum over 200,000 rows, four partitions);
- a ``%%spark_sql`` cell whose result comes back with ``-o``;
- a UDF reading ``lookup.csv``: its own notebook's text, never another's;
- a cancel from the relay: a long cell, its group found and cancelled through the Jupyter
  server's REST relay (what the sidebar does) while the cell runs; the cell must end
  cancelled.

Every ``--chaos-every`` seconds (20) one notebook (never a streaming one) is restarted
(the server's kernel restart) or shut down and replaced by a new notebook, at random;
either way its sessions must leave the driver (its lease gone) and the notebook, made
again, runs on.

Sampled every 5 s: the driver JVM's resident memory, heap in use (``jcmd GC.heap_info``)
and thread count. At the end every notebook stops its sessions and shuts down; once the
thread count settled (Spark's cached pools end idle threads after 60 s) and after a full
GC (``jcmd GC.run``), the heap in use and the thread count are compared with those of the
idle warm driver before the first notebook (a leak per session would keep them up); no
lease is left; once the Jupyter server stopped, the driver and its keeper end and no
process of the run is left.

Verdicts (all must hold): every cell right, every file its own notebook's, no lease of a
gone kernel left (within 15 s), heap after GC within 1.25x + 32 MB of the idle baseline,
no kind of thread (named alike, ``jcmd Thread.print``) grown by more than 8 but the
workers of Spark's bounded pools (``BOUNDED_POOLS``: they fill up to their size once and
shrink slowly; a leak per session grows by the sessions made), nothing left after the
stop, and no Python worker daemon of an ended session left (Spark keeps one per session
that ran Python, with four threads, until the driver stops; ``jss.EndedSessionDaemons``
stops them within two of its 30 s looks).

Run: ``python benchmarks/shared_driver_soak.py`` (``--minutes M --notebooks N``;
``--quick``: 75 seconds, 4 notebooks, a chaos every 8 s, results to a temp file); writes
benchmarks/results/shared_driver_soak.json. The soak tests of
tests/test_shared_driver_kernel.py run the quick version in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from e2e.waiting import wait_until
from shared_driver_processes import kill_recorded_server, server_jvms
from test_shared_driver_kernel import _open_notebook  # a notebook's kernel, through the server
from test_spark_ui_proxy import JupyterServer  # a real Jupyter server, its own runtime folder

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous, ServerRecord

RESULTS = Path(__file__).parent / "results" / "shared_driver_soak.json"
RELAY = "jupyter-spark-sessions/api/kernels/{}/requests"
CONFIG = (
    "c.SparkSessionsConfig.shared_driver_prewarm = True\n"
    "c.SparkSessionsConfig.shared_driver_master = 'local[2]'\n"
    "c.SparkSessionsConfig.shared_driver_idle_timeout = 3600.0\n"
    "c.SparkSessionsConfig.shared_driver_restart_grace = 5.0\n"
)
HEAP_FACTOR, HEAP_SLACK_MB = 1.25, 32.0
#: A kind of thread (threads named alike) may grow by this many: Spark's bounded pools
#: (task results, RPC, Netty) fill up to their size once. A leak per session grows by
#: about the number of sessions the soak made (dozens in 2 minutes).
GROUP_SLACK = 8
#: Seconds for the daemons of ended sessions to go (two looks of jss.EndedSessionDaemons).
DAEMONS_RELEASED_WITHIN = 90
#: ``--quick``, and the soak tests of tests/test_shared_driver_kernel.py in CI: the chaos
#: (at least four restarts or shutdowns) and the notebooks' mix, in 75 seconds (the
#: hour is the benchmark's; CI's two cores have the whole suite to run: issue 47).
QUICK = {"minutes": 1.25, "notebooks": 4, "chaos_every": 8.0}
#: Workers of Spark's pools with a maximum size, which shrink slowly or not at all when
#: idle: the Spark UI's Jetty pool (the boards' reads of the REST API; Jetty ends one idle
#: thread a minute), the block manager's pools (up to 100 each), anonymous executors.
BOUNDED_POOLS = re.compile(r"^(SparkUI-N|block-manager-[a-z-]+-thread-pool-N|pool-N-thread-N)$")
STREAMING = 2  # the first notebooks, which run a streaming query
REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"
SQL = "SELECT count(*) AS n FROM range(5000)"
LONG_CELL = (
    "%%spark_session {s}\n"
    "from pyspark.sql.functions import udf\n"
    "spark.range(0, 4, 1, 2).select(udf(lambda x: __import__('time').sleep(60) or x, 'long')"
    "('id')).collect()"
)


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


@dataclass
class Tally:
    """What the notebooks did and what went wrong, shared by their threads."""

    cells: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ran(self, action: str, seconds: float) -> None:
        with self.lock:
            self.cells[action] += 1
            self.seconds.setdefault(action, []).append(seconds)

    def failed(self, text: str) -> None:
        log(f"FAILED {text}")
        with self.lock:
            self.failures.append(text)


class Notebook:
    """One notebook of the server: its kernel, its two sessions, its own file."""

    def __init__(self, server: JupyterServer, name: str, folder: Path, streaming: bool) -> None:
        self.server, self.name, self.streaming = server, name, streaming
        self.folder = folder / name
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "lookup.csv").write_text(f"lookup of {name}\n")
        self.lock = threading.Lock()  # the chaos thread waits for the notebook's cell
        self.closed = False
        self.kernel_id, self.kernel = _open_notebook(server, f"{name}.ipynb")
        self.set_up()

    @property
    def sessions(self) -> tuple[str, str]:
        return f"{self.name}a", f"{self.name}b"

    def set_up(self) -> None:
        a, b = self.sessions
        self.pid = int(self.kernel.value("__import__('os').getpid()"))
        for session in (a, b):
            self.kernel.ok(f"%spark_session create {session} --remote shared")
            self.kernel.ok(f"%spark_session add_file {session} {self.folder / 'lookup.csv'}")
        if self.streaming:
            self.kernel.ok(
                f"%%spark_session {b}\n"
                "_query = (spark.readStream.format('rate').option('rowsPerSecond', 5).load()"
                f".writeStream.format('memory').queryName('soak_{self.name}').start())"
            )

    def step(self, action: str, tally: Tally) -> None:
        a, b = self.sessions
        began = time.monotonic()
        with self.lock:
            if self.closed:
                return
            if action == "dataframe":
                got = self.kernel.value(
                    f"{REGISTRY}.session({a!r}).range(0, 200000, 1, 4)"
                    ".selectExpr('sum(id) AS s').first().s"
                )
                right = got == 199999 * 200000 // 2
            elif action == "sql":
                self.kernel.ok(
                    f"%%spark_sql {b} -o _soak_sql\nSELECT count(*) AS n FROM range(5000)"
                )
                got = self.kernel.value("int(_soak_sql.n[0])")
                right = got == 5000
            elif action == "file":
                self.kernel.ok(
                    f"%%spark_session {a}\n"
                    "from pyspark.sql.functions import udf\n"
                    "_soak_read = spark.range(0, 2, 1, 2).select(udf(lambda x: "
                    "open('lookup.csv').read().strip(), 'string')('id')).collect()"
                )
                got = sorted(
                    {row[0] for row in self.kernel.value("[tuple(r) for r in _soak_read]")}
                )
                right = got == [f"lookup of {self.name}"]
            else:  # cancel from the relay
                got, right = self.cancel_from_the_relay(a)
        if not right:
            tally.failed(f"{self.name} {action}: got {got!r}")
        tally.ran(action, time.monotonic() - began)

    def cancel_from_the_relay(self, session: str) -> tuple[Any, bool]:
        busy = self.kernel.client.execute(LONG_CELL.format(s=session))
        cancelled: Any = None
        try:
            deadline, group = time.monotonic() + 60, None
            while group is None and time.monotonic() < deadline:
                for found in self.relay({"version": 1, "action": "list"})["board"]["groups"]:
                    if found["session"] == session and found["state"] == "running":
                        group = found["id"]
                time.sleep(0.3)
            if group is not None:
                reply = self.relay({"version": 1, "action": "cancel", "groups": [group]})
                cancelled = reply.get("cancelling")
        finally:
            if not cancelled:  # the long cell must not hold the notebook
                self.server.api("POST", f"api/kernels/{self.kernel_id}/interrupt")
            result = self.kernel.collect(busy, timeout=90)
        ended = f"{result.error_name}: {result.error_value[:120]}"
        return (cancelled, ended), bool(cancelled) and "cancelled" in ended.lower()

    def relay(self, body: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = self.server.api("POST", RELAY.format(self.kernel_id), body)
        return reply

    def restart(self) -> None:
        """The server's restart of the kernel (its sessions go); the notebook sets up again."""
        with self.lock:
            self.server.api("POST", f"api/kernels/{self.kernel_id}/restart")
            self.kernel.ok("%load_ext jupyter_spark_sessions", timeout=120)
            self.set_up()

    def check_streaming(self, tally: Tally) -> None:
        with self.lock:
            table = f"soak_{self.name}"
            rows = self.kernel.value(
                f"{REGISTRY}.session({self.sessions[1]!r})"
                f".sql('SELECT count(*) AS n FROM {table}').first().n"
            )
            self.kernel.ok("_query.stop()")
        if not rows:
            tally.failed(f"{self.name} streaming: no row in its memory table")
        tally.ran("streaming", 0.0)

    def close(self) -> None:
        with self.lock:
            for session in self.sessions:
                self.kernel.execute(f"%spark_session stop {session}", timeout=120)
            self.kernel.close()
            self.server.api("DELETE", f"api/kernels/{self.kernel_id}")


class Sampler:
    """The driver JVM's RSS, heap in use and threads every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 5.0) -> None:
        self.pid, self.every = pid, every
        self.samples: list[dict[str, float]] = []
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.samples.append(
                    {"t": round(time.monotonic() - self.started, 1), **server_figures(self.pid)}
                )
            except (psutil.Error, subprocess.SubprocessError, ValueError):
                return

    def stop(self) -> list[dict[str, float]]:
        self._stop.set()
        self._thread.join(30)
        return self.samples


def heap_used_mb(pid: int, gc_first: bool = False) -> float:
    """The JVM's heap in use (``jcmd GC.heap_info``), after a full GC when asked."""
    if gc_first:
        subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60, check=True)
    out = subprocess.run(
        ["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    # G1 names one heap ("garbage-first heap total ..K, used ..K"), the serial and
    # parallel collectors a young and an old generation: the heap is their sum
    # (Metaspace's line, "Metaspace used ..K", is not heap).
    used = re.findall(r"(?:heap|generation)\s+total \d+K, used (\d+)K", out)
    if not used:
        raise ValueError(f"no heap figure in jcmd's answer: {out[:300]}")
    return sum(int(kb) for kb in used) / 1024


def server_figures(pid: int, gc_first: bool = False) -> dict[str, float]:
    process = psutil.Process(pid)
    return {
        "rss_mb": round(process.memory_info().rss / 2**20, 1),
        "heap_mb": round(heap_used_mb(pid, gc_first), 1),
        "threads": float(process.num_threads()),
    }


def where(error: BaseException) -> str:
    """An unexpected error in one line: its type, text and the line that raised it."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__}: {error} ({Path(frame.filename).name}:{frame.lineno})"


def running_record(rendezvous: Rendezvous) -> ServerRecord | None:
    record = rendezvous.read()
    return record if record is not None and record.state == "running" else None


def thread_groups(pid: int) -> Counter[str]:
    """The JVM's threads by kind: their names (``jcmd Thread.print``) without numbers."""
    out = subprocess.run(
        ["jcmd", str(pid), "Thread.print"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    names = re.findall(r'^"([^"]+)"', out, re.MULTILINE)
    return Counter(re.sub(r"\d+", "N", name) for name in names)


def grown_groups(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """Kinds of thread there are more of ``after``, by how many (most first)."""
    grown = {name: after[name] - before.get(name, 0) for name in after}
    return dict(sorted(((n, g) for n, g in grown.items() if g > 0), key=lambda x: -x[1]))


def python_daemons(pid: int) -> int:
    """The Python worker daemons (``pyspark.daemon``) the driver JVM ``pid`` runs."""
    found = 0
    for child in psutil.Process(pid).children():
        try:
            found += "pyspark.daemon" in " ".join(child.cmdline())
        except psutil.Error:  # a zombie, or gone meanwhile: no daemon of a session
            continue
    return found


def settle_threads(pid: int, since: float, timeout: float = 100.0) -> None:
    """Wait until the JVM's thread count stops falling: Spark's cached thread pools
    (block manager, shuffle, query stages, task launch) end idle threads after 60 s of
    idleness, counted from ``since`` (``time.monotonic()`` when the work ended: the
    wait for the daemons runs in those 60 s too)."""
    deadline, last = since + timeout, psutil.Process(pid).num_threads()
    while time.monotonic() < deadline:
        time.sleep(10)
        now = psutil.Process(pid).num_threads()
        if now >= last and time.monotonic() > since + 70:
            return
        last = min(last, now)


def held_by(rendezvous: Rendezvous, record: ServerRecord, pid: int) -> bool:
    """Whether kernel process ``pid`` still holds sessions on the shared server."""
    return any(lease.kernel.pid == pid and lease.sessions for lease in rendezvous.leases(record))


def leftovers(runtime: Path) -> list[str]:
    """Processes of the run still alive: the shared server's JVMs, a keeper, a kernel."""
    found = [f"server JVM {p.pid}" for p in server_jvms(runtime)]
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if str(runtime) in line and process.pid != os.getpid():
            found.append(f"{process.pid}: {line[:120]}")
    return sorted(set(found))


def soak(
    base: Path, minutes: float, notebooks: int, chaos_every: float, seed: int, pause: float = 2.0
) -> dict[str, Any]:
    """The soak (see the module's docstring); ``pause``: the mean seconds between one
    notebook's cells."""
    rng = random.Random(seed)
    (base / "jupyter").mkdir()
    server = JupyterServer(base / "jupyter", kernel_config=CONFIG)
    rendezvous = Rendezvous(server.runtime_dir)
    tally = Tally()
    chaos: Counter[str] = Counter()
    release_seconds: list[float] = []
    record = None
    try:
        if not wait_until(lambda: running_record(rendezvous) is not None, 180, 0.5):
            raise RuntimeError("the pre-warmed shared driver did not start within 180 s")
        record = running_record(rendezvous)
        assert record is not None
        idle = server_figures(record.server_pid, gc_first=True)
        idle_groups = thread_groups(record.server_pid)
        idle_daemons = python_daemons(record.server_pid)
        log(f"idle warm driver: {idle}")
        sampler = Sampler(record.server_pid)
        opened = [
            Notebook(server, f"nb{i}", base / "files", streaming=i < STREAMING)
            for i in range(notebooks)
        ]
        log(f"{notebooks} notebooks open, two sessions each")
        with_notebooks = server_figures(record.server_pid)
        names = notebooks
        stop_at = time.monotonic() + minutes * 60

        def work(slot: int) -> None:
            while time.monotonic() < stop_at:
                action = rng.choice(["dataframe", "sql", "file", "dataframe", "sql", "cancel"])
                try:
                    opened[slot].step(action, tally)
                except Exception as error:  # a cell that errs is a failure, not the end
                    tally.failed(f"{opened[slot].name} {action}: {where(error)}")
                time.sleep(rng.uniform(pause / 2, pause * 1.5))

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(notebooks)]
        for thread in threads:
            thread.start()
        while time.monotonic() + chaos_every < stop_at:
            time.sleep(chaos_every)
            slot = rng.randrange(STREAMING, notebooks)
            victim = opened[slot]
            what = rng.choice(["restart", "shutdown"])
            began = time.monotonic()
            try:
                old_pid = victim.pid  # (its client is its thread's: not used from here)
                if what == "restart":
                    victim.restart()
                else:
                    with victim.lock:
                        victim.closed = True  # its thread's next step goes to the new one
                        victim.kernel.close()
                        server.api("DELETE", f"api/kernels/{victim.kernel_id}")
                        opened[slot] = Notebook(server, f"nb{names}", base / "files", False)
                        names += 1
                # The old kernel process's sessions leave the driver with its lease.
                if not wait_until(
                    lambda pid=old_pid: not held_by(rendezvous, record, pid), 15, 0.5
                ):
                    tally.failed(f"{what} of {victim.name}: its sessions still held after 15 s")
                release_seconds.append(time.monotonic() - began)
                chaos[what] += 1
                log(f"{what} of {victim.name} done in {time.monotonic() - began:.1f} s")
            except Exception as error:
                tally.failed(f"{what} of {victim.name}: {where(error)}")
        for thread in threads:
            thread.join(180)
        for notebook in opened[:STREAMING]:
            notebook.check_streaming(tally)
        for notebook in opened:
            notebook.close()
        idle_since = time.monotonic()
        leases_left = wait_until(
            lambda: not any(lease.sessions for lease in rendezvous.leases(record)), 30, 0.5
        )
        daemons_released = wait_until(
            lambda: python_daemons(record.server_pid) <= idle_daemons, DAEMONS_RELEASED_WITHIN, 1
        )
        settle_threads(record.server_pid, since=idle_since)
        samples = sampler.stop()
        after = server_figures(record.server_pid, gc_first=True)
        daemons = python_daemons(record.server_pid)
        grown = grown_groups(idle_groups, thread_groups(record.server_pid))
        log(f"after every notebook left: {after}")
        server.stop()
        server_gone = wait_until(lambda: not leftovers(server.runtime_dir), 90, 0.5)
        left = leftovers(server.runtime_dir)
    finally:
        if server.process.poll() is None:
            server.stop()
        kill_recorded_server(server.runtime_dir, record)
    heap_ok = after["heap_mb"] <= idle["heap_mb"] * HEAP_FACTOR + HEAP_SLACK_MB
    # No kind of thread may grow by more than a bounded pool does.
    leaking = {
        name: more
        for name, more in grown.items()
        if more > GROUP_SLACK and not BOUNDED_POOLS.match(name)
    }
    threads_ok = not leaking
    verdicts = {
        "every_cell_right": not tally.failures,
        "no_lease_left": leases_left,
        "heap_back": heap_ok,
        "threads_back": threads_ok,
        "python_daemons_released": daemons_released,
        "nothing_left_after_stop": server_gone and not left,
    }
    return {
        "minutes": minutes,
        "notebooks": notebooks,
        "chaos_every_s": chaos_every,
        "pause_s": pause,
        "seed": seed,
        "cells": dict(tally.cells),
        "cell_seconds_median": {
            k: round(sorted(v)[len(v) // 2], 2) for k, v in tally.seconds.items() if v
        },
        "chaos": dict(chaos),
        "chaos_seconds_max": round(max(release_seconds, default=0.0), 1),
        "failures": tally.failures[:50],
        "idle_driver": idle,
        "with_notebooks": with_notebooks,
        "after_notebooks_left": after,
        "python_daemons": {"idle": idle_daemons, "after_notebooks_left": daemons},
        "threads_grown": grown,
        "left_after_stop": left,
        "samples": samples,
        "verdicts": verdicts,
    }


def machine() -> dict[str, Any]:
    import pyspark

    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--notebooks", type=int, default=10)
    parser.add_argument("--chaos-every", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=50)
    parser.add_argument("--pause", type=float, default=2.0, help="mean seconds between cells")
    parser.add_argument(
        "--quick", action="store_true", help="75 seconds, 4 notebooks, a chaos every 8 s"
    )
    args = parser.parse_args()
    if args.quick:
        vars(args).update(QUICK)
    base = Path(tempfile.mkdtemp(prefix="jss-soak-"))
    result = {
        "benchmark": "shared_driver_soak",
        "machine": machine(),
        **soak(base, args.minutes, args.notebooks, args.chaos_every, args.seed, args.pause),
    }
    out = Path(tempfile.mkstemp(suffix=".json")[1]) if args.quick else RESULTS
    out.write_text(json.dumps(result, indent=1) + "\n")
    log(f"verdicts: {result['verdicts']}; written to {out}")
    sys.exit(0 if all(result["verdicts"].values()) else 1)


if __name__ == "__main__":
    main()

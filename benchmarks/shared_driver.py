"""Many notebooks, one driver (``%spark_session create NAME --remote shared``): five
notebooks on the user's shared Spark Connect server against five notebooks each with a
classic driver of its own, through real kernels, in one run.

Every kernel (``tests/kernel_driver.py``) has ``%load_ext jupyter_spark_sessions`` and
one IPython profile: the shared server's rendezvous in a temp folder
(``shared_driver_dir``) and its master ``local[2]``, as each own driver's (``create nbK
--master local[2]``). Every setting not named here is the package's default (the Spark
UI on, the in-cell progress view on), as a user gets it. One unmeasured kernel with an
own driver warms the disk cache first.

Figures:

1. Time to the first result: N = 5 notebooks, one after another (the earlier ones stay
   open), each from its kernel being ready (after ``%load_ext``) until the reply of
   ``create nbK ...`` then of a ``%%spark_session nbK`` cell running
   ``spark.range(1000).selectExpr('sum(id)').collect()``. (a) own drivers (``--master
   local[2]``), then (b) the shared server (``--remote shared``; notebook 1 starts it).
   Target: notebooks 2..5, mean on the shared server / mean on own drivers <= 0.25
   (moonshot 0.1). Notebook 1's times are reported.
2. Resident memory with the 5 notebooks open, after their first results: the RSS of
   the 5 kernels and of every process below them (own drivers: each kernel's JVM;
   shared: the keeper, a detached child of notebook 1's kernel, and the server's JVM,
   each counted once: a set of pids), median of 3 samples a second apart. PSS is
   recorded too (the 5 JVMs' shared pages counted once). Target: shared / own <= 0.5.
3. Spark Connect's own cost: on the shared server (notebook 1's session, the other four
   notebooks shut down) against a classic session in a fresh kernel (``local[2]``),
   both alive, one at a time, ``ROUNDS`` of each in ABBA order after one unmeasured run
   of each: spark_auth_cost's 20,000-task JVM-only job
   (``range(0, 20000, 1, 20000).write.format('noop')``), and a 1,000,000-row
   ``toPandas()``. Each is timed inside the cell around the action, and as the cell's
   wall time at the client. Medians; no target (the ratio is reported).

At the end every kernel is shut down, the keeper is stopped (SIGTERM, as a user's stop;
SIGKILL after 30 s) and the run fails if any process it saw (kernels, JVMs, the
keeper) is still alive.

Run: ``python benchmarks/shared_driver.py`` (``--rounds N``, ``--notebooks N``; ``--quick``:
2 notebooks, 1 round, results to a temp file); writes
benchmarks/results/shared_driver.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous, ServerRecord
from kernel_driver import CellResult, Kernel  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "shared_driver.json"
NOTEBOOKS = 5
ROUNDS = 4
MASTER = "local[2]"
TARGETS = {"first_result_ratio": 0.25, "first_result_moonshot": 0.1, "memory_ratio": 0.5}

PROFILE = (
    "c.SparkSessionsConfig.shared_driver_dir = {folder!r}\n"
    f"c.SparkSessionsConfig.shared_driver_master = {MASTER!r}\n"
    "c.SparkSessionsConfig.shared_driver_idle_timeout = 600.0\n"
)

QUERY = "spark.range(1000).selectExpr('sum(id)').collect()"
FIRST_QUERY = "%%spark_session {name}\nprint('SUM', " + QUERY + "[0][0])"
SUM = 499500

JOB = "spark.range(0, 20000, 1, 20000).write.format('noop').mode('overwrite').save()"
TO_PANDAS = "spark.range(1000000).selectExpr('id', 'id*2 AS d').toPandas()"
TIMED = (
    "%%spark_session {name}\n"
    "import time as _time\n"
    "_started = _time.perf_counter()\n"
    "_out = {action}\n"
    "print('ELAPSED', _time.perf_counter() - _started, 'ROWS', len(_out) if _out is not None "
    "else -1)\n"
    "del _out"
)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---- kernels ---------------------------------------------------------------------------


class Notebook:
    """One kernel (a notebook) with jupyter_spark_sessions loaded."""

    def __init__(self, base: Path, label: str) -> None:
        cwd = base / "cwd" / label
        cwd.mkdir(parents=True)
        self.label = label
        self.kernel = Kernel(env={"IPYTHONDIR": str(base / "ipython")}, cwd=str(cwd))
        try:
            self.kernel.ok("%load_ext jupyter_spark_sessions")
            self.pid = int(self.kernel.value("__import__('os').getpid()"))
        except BaseException:
            self.shutdown()
            raise
        self.cells: dict[str, CellResult] = {}

    def run(self, key: str, code: str, timeout: float = 600) -> CellResult:
        result = self.kernel.ok(code, timeout)
        self.cells[key] = result
        return result

    def shutdown(self) -> None:
        try:
            self.kernel.shutdown()
        finally:
            shutil.rmtree(self.kernel._spec_root, ignore_errors=True)


def first_result(notebook: Notebook, create: str, name: str) -> dict[str, Any]:
    """Time ``create`` then the first query, from a ready kernel."""
    started = time.perf_counter()
    notebook.run("create", create)
    created = time.perf_counter()
    out = notebook.run("first_query", FIRST_QUERY.format(name=name)).stdout
    ended = time.perf_counter()
    if f"SUM {SUM}" not in out:
        raise AssertionError(f"{notebook.label}: wrong first result: {out!r}")
    return {"create_s": created - started, "query_s": ended - created, "total_s": ended - started}


# ---- processes and memory --------------------------------------------------------------


def family(pids: Iterable[int]) -> set[int]:
    """``pids`` and every process below them (each once)."""
    found: set[int] = set()
    for pid in pids:
        try:
            process = psutil.Process(pid)
            found.add(pid)
            found.update(child.pid for child in process.children(recursive=True))
        except psutil.Error:
            continue
    return found


def role(process: psutil.Process, kernels: set[int], record: ServerRecord | None) -> str:
    if process.pid in kernels:
        return "kernel"
    if record is not None and process.pid == record.keeper.pid:
        return "keeper"
    if process.name() == "java":
        return "jvm"
    return "other"


def memory(kernel_pids: list[int], record: ServerRecord | None) -> dict[str, Any]:
    """RSS (and PSS) of the kernels and everything below them, median of 3 samples."""
    roots = list(kernel_pids)
    if record is not None:  # below notebook 1's kernel already; counted once either way
        roots += [record.keeper.pid, record.server_pid]
    samples = []
    for number in range(3):
        if number:
            time.sleep(1.0)
        processes = []
        for pid in sorted(family(roots)):
            try:
                process = psutil.Process(pid)
                info = process.memory_full_info()
                processes.append(
                    {
                        "pid": pid,
                        "name": process.name(),
                        "role": role(process, set(kernel_pids), record),
                        "rss_mb": info.rss / 2**20,
                        "pss_mb": getattr(info, "pss", 0) / 2**20,
                    }
                )
            except psutil.Error:
                continue
        samples.append(processes)

    def total(processes: list[dict[str, Any]], key: str, which: str = "") -> float:
        return sum(p[key] for p in processes if not which or p["role"] == which)

    samples.sort(key=lambda processes: total(processes, "rss_mb"))
    middle = samples[1]
    return {
        "rss_mb": total(middle, "rss_mb"),
        "pss_mb": total(middle, "pss_mb"),
        "rss_mb_samples": [total(s, "rss_mb") for s in samples],
        "by_role_rss_mb": {
            which: total(middle, "rss_mb", which) for which in ("kernel", "jvm", "keeper", "other")
        },
        "jvms": sum(p["role"] == "jvm" for p in middle),
        "processes": middle,
    }


# ---- Spark Connect's own cost ----------------------------------------------------------


def timed_action(notebook: Notebook, name: str, action: str, rows: int) -> dict[str, float]:
    started = time.perf_counter()
    out = notebook.kernel.ok(TIMED.format(name=name, action=action), 900).stdout
    wall = time.perf_counter() - started
    line = next(ln for ln in out.splitlines() if ln.startswith("ELAPSED "))
    _, elapsed, _, got = line.split()
    if int(got) != rows:
        raise AssertionError(f"{notebook.label}: {rows} rows expected, got {got}: {out!r}")
    return {"action_s": float(elapsed), "cell_s": wall}


def compare(
    sides: dict[str, tuple[Notebook, str]], action: str, rows: int, rounds: int
) -> dict[str, Any]:
    """``rounds`` runs of ``action`` on each side, ABBA, after one unmeasured run on
    each (a JVM's first run of a job is up to twice as slow: its JIT)."""
    warm = {
        side: timed_action(notebook, name, action, rows) for side, (notebook, name) in sides.items()
    }
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for number in range(rounds):
        order = ("shared", "own") if number % 2 == 0 else ("own", "shared")
        for side in order:
            notebook, name = sides[side]
            runs[side].append(timed_action(notebook, name, action, rows))
            log(
                f"  {side:6} action {runs[side][-1]['action_s']:.2f} s, "
                f"cell {runs[side][-1]['cell_s']:.2f} s"
            )
    medians = {
        side: {key: statistics.median(r[key] for r in runs[side]) for key in ("action_s", "cell_s")}
        for side in sides
    }
    return {
        "action": action,
        "runs": runs,
        "warm_up": warm,
        "median": medians,
        "ratio_action": medians["shared"]["action_s"] / medians["own"]["action_s"],
        "ratio_cell": medians["shared"]["cell_s"] / medians["own"]["cell_s"],
    }


# ---- the run ---------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {
        "cpus": os.cpu_count(),
        "memory_gb": psutil.virtual_memory().total / 2**30,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "java": java.splitlines()[0] if java else "",
    }


def noise(notebooks: list[Notebook]) -> dict[str, Any]:
    """What each measured cell printed beyond its own lines: stderr, and stdout of the
    create cells (what the user reads)."""
    found: dict[str, Any] = {}
    for notebook in notebooks:
        for key, cell in notebook.cells.items():
            stdout = [ln for ln in cell.stdout.splitlines() if not ln.startswith("SUM ")]
            if cell.stderr or stdout:
                found[f"{notebook.label}/{key}"] = {
                    "stdout": "\n".join(stdout)[:2000],
                    "stderr": cell.stderr[:2000],
                }
    return found


class Seen:
    """Every process of the run (told apart from a later one with the same pid)."""

    def __init__(self) -> None:
        self.processes: dict[int, psutil.Process] = {}

    def update(self, pids: Iterable[int]) -> None:
        for pid in pids:
            if pid and pid not in self.processes:
                try:
                    self.processes[pid] = psutil.Process(pid)
                except psutil.Error:
                    continue

    def add(self, pid: int) -> None:
        self.update([pid])

    def running(self) -> list[dict[str, Any]]:
        left = []
        for process in self.processes.values():
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    cmdline = " ".join(process.cmdline())[:200]
                    left.append({"pid": process.pid, "name": process.name(), "cmdline": cmdline})
            except psutil.Error:
                continue
        return left


class Neighbours:
    """Samples, every 2 s, the heavy processes on the machine that are not this run's
    (test runs, browsers, other JVMs) and the CPU they use: a run beside busy ones is not
    a quiet one."""

    KINDS = ("java", "chromium", "pytest", "ipykernel_launcher", "jupyter-lab")

    def __init__(self) -> None:
        self.samples: list[tuple[list[str], float]] = []  # kinds seen, their CPU (cores)
        self._known: dict[int, psutil.Process] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(2.0):
            ours = {p.pid for p in me.children(recursive=True)} | {me.pid}
            kinds, cpu = set(), 0.0
            for process in psutil.process_iter(["pid", "name", "cmdline"]):
                if process.info["pid"] in ours:
                    continue
                text = " ".join(process.info["cmdline"] or []) or process.info["name"] or ""
                kind = next((k for k in self.KINDS if k in text), "")
                if not kind:
                    continue
                kinds.add(kind)
                known = self._known.setdefault(process.pid, process)
                try:
                    cpu += known.cpu_percent(None) / 100  # since the last sample
                except psutil.Error:
                    continue
            self.samples.append((sorted(kinds), cpu))

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        cpu = [c for _, c in self.samples]
        return {
            "samples": len(self.samples),
            "samples_with_others": sum(bool(k) for k, _ in self.samples),
            "kinds_seen": sorted({kind for k, _ in self.samples for kind in k}),
            "their_cpu_cores_mean": statistics.mean(cpu) if cpu else 0.0,
            "their_cpu_cores_max": max(cpu, default=0.0),
            "samples_above_half_a_core": sum(c > 0.5 for c in cpu),
        }


def stop_shared_server(folder: Path, seen: Seen) -> dict[str, Any]:
    """After every kernel's shutdown: the leases left, then the keeper stopped."""
    rendezvous = Rendezvous(folder)
    record = rendezvous.read()
    outcome: dict[str, Any] = {"record_left": record is not None}
    if record is None:
        return outcome
    outcome["leases_left"] = [lease.kernel.pid for lease in rendezvous.leases(record)]
    targets = [pid for pid in (record.keeper.pid, record.server_pid) if pid]
    seen.update(targets)
    processes = []
    for pid in targets:
        try:
            processes.append(psutil.Process(pid))
        except psutil.Error:
            continue
    if record.keeper.alive():
        os.kill(record.keeper.pid, signal.SIGTERM)
    _, alive = psutil.wait_procs(processes, timeout=30)
    outcome["killed_after_sigterm"] = [p.pid for p in alive]
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=10)
    outcome["record_left_after_stop"] = rendezvous.read() is not None
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of each side (fig. 3)")
    parser.add_argument("--notebooks", type=int, default=NOTEBOOKS, help="N (fig. 1, 2)")
    parser.add_argument("--quick", action="store_true", help="2 notebooks, 1 round, temp file")
    parser.add_argument("--output", type=Path, help="where to write the JSON result")
    args = parser.parse_args()
    if args.quick:
        args.notebooks, args.rounds = 2, 1
    output = args.output or (
        Path(tempfile.gettempdir()) / "shared_driver.quick.json" if args.quick else RESULTS
    )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    base = Path(tempfile.mkdtemp(prefix="jss-bench-shared-"))
    shared_dir = base / "shared"
    shared_dir.mkdir(mode=0o700)
    profile = base / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(PROFILE.format(folder=str(shared_dir)))
    load_before = os.getloadavg()[0]
    neighbours = Neighbours()
    seen = Seen()  # every process of the run, to check none is left
    alive: list[Notebook] = []
    all_notebooks: list[Notebook] = []
    result: dict[str, Any] = {}
    cleanup: dict[str, Any] = {}

    def start(label: str) -> Notebook:
        notebook = Notebook(base, label)
        alive.append(notebook)
        all_notebooks.append(notebook)
        seen.add(notebook.pid)
        return notebook

    def shut(notebooks: list[Notebook]) -> None:
        for notebook in notebooks:
            seen.update(family([notebook.pid]))
            notebook.shutdown()
            alive.remove(notebook)

    try:
        log("warm-up: one kernel with an own driver (unmeasured)")
        warm = start("warm-up")
        first_result(warm, f"%spark_session create w --master {MASTER}", "w")
        shut([warm])

        times: dict[str, list[dict[str, Any]]] = {"own": [], "shared": []}
        memories: dict[str, dict[str, Any]] = {}
        record: ServerRecord | None = None
        for side in ("own", "shared"):
            opened = []
            for number in range(1, args.notebooks + 1):
                name = f"nb{number}"
                notebook = start(f"{side}-{name}")
                opened.append(notebook)
                where = "--remote shared" if side == "shared" else f"--master {MASTER}"
                figure = first_result(notebook, f"%spark_session create {name} {where}", name)
                times[side].append(figure)
                log(
                    f"{side} {name}: first result {figure['total_s']:.2f} s "
                    f"(create {figure['create_s']:.2f} s, query {figure['query_s']:.2f} s)"
                )
            if side == "shared":
                record = Rendezvous(shared_dir).read()
                if record is None or record.state != "running":
                    raise AssertionError(f"no running shared server: {record}")
                seen.update({record.keeper.pid, record.server_pid})
            memories[side] = memory([n.pid for n in opened], record if side == "shared" else None)
            seen.update(p["pid"] for p in memories[side]["processes"])
            log(
                f"{side}: RSS {memories[side]['rss_mb']:.0f} MB "
                f"({memories[side]['jvms']} JVMs), PSS {memories[side]['pss_mb']:.0f} MB"
            )
            if side == "own":
                shut(opened)
            else:
                shared_nb1 = opened[0]
                shut(opened[1:])  # notebook 1 (its kernel the keeper's parent) stays

        log("Spark Connect's own cost: shared nb1 against a classic session")
        classic = start("classic")
        classic.run("create", f"%spark_session create c --master {MASTER}")
        sides = {"shared": (shared_nb1, "nb1"), "own": (classic, "c")}
        seen.update(family([classic.pid]))
        log(f"20,000-task job, {args.rounds} rounds of each")
        job = compare(sides, JOB, -1, args.rounds)
        log(f"1,000,000-row toPandas(), {args.rounds} rounds of each")
        to_pandas = compare(sides, TO_PANDAS, 1_000_000, args.rounds)

        own = [t["total_s"] for t in times["own"][1:]]
        shared = [t["total_s"] for t in times["shared"][1:]]
        ratio = statistics.mean(shared) / statistics.mean(own)
        memory_ratio = memories["shared"]["rss_mb"] / memories["own"]["rss_mb"]
        result = {
            "benchmark": "shared_driver",
            "notebooks": args.notebooks,
            "quick": bool(args.quick),
            "rounds": args.rounds,
            "master": MASTER,
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": machine(),
            "first_query": QUERY,
            "job": JOB,
            "to_pandas": TO_PANDAS,
            "first_result": {
                "own": times["own"],
                "shared": times["shared"],
                "own_mean_2_to_n_s": statistics.mean(own),
                "shared_mean_2_to_n_s": statistics.mean(shared),
                "ratio": ratio,
                "per_notebook_ratio": [s / o for s, o in zip(shared, own, strict=True)],
                "meets_target": ratio <= TARGETS["first_result_ratio"],
                "meets_moonshot": ratio <= TARGETS["first_result_moonshot"],
            },
            "memory": {
                "own": memories["own"],
                "shared": memories["shared"],
                "ratio": memory_ratio,
                "pss_ratio": memories["shared"]["pss_mb"] / memories["own"]["pss_mb"],
                "meets_target": memory_ratio <= TARGETS["memory_ratio"],
            },
            "connect_cost": {"job_20000_tasks": job, "to_pandas_1m_rows": to_pandas},
            "targets": TARGETS,
            "cell_output": noise(all_notebooks),
        }
        result["meets_targets"] = (
            result["first_result"]["meets_target"] and result["memory"]["meets_target"]
        )
    finally:
        for notebook in list(alive):
            try:
                shut([notebook])
            except Exception as exc:  # go on: the others and the server must stop too
                log(f"shutdown of {notebook.label} failed: {exc}")
        cleanup = stop_shared_server(shared_dir, seen)
        time.sleep(1.0)
        cleanup["left_running"] = seen.running()
        cleanup["processes_seen"] = len(seen.processes)
        shutil.rmtree(base, ignore_errors=True)
        log(f"cleanup: {cleanup}")
    result["cleanup"] = cleanup
    result["other_processes"] = neighbours.stop()
    result["load_average_1m"] = {"before": load_before, "after": os.getloadavg()[0]}
    if cleanup["left_running"]:
        raise AssertionError(f"processes left running: {cleanup['left_running']}")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    summary = {k: result[k] for k in ("first_result", "meets_targets", "cleanup")}
    print(json.dumps(summary, indent=2))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()

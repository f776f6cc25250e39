"""Counts what a test run starts: kernels, JVMs, Jupyter servers and browsers, the start-ups
where a kernel-level suite spends most of its time. A thread samples the run's process
tree (a few times a second; every one of these lives for seconds at least) and counts
each process once, by pid and start time."""

from __future__ import annotations

import threading
from collections import Counter

import psutil

#: The kinds counted, in the order the summary names them.
KINDS = ("kernels", "JVMs", "Jupyter servers", "browsers")


def kind_of(name: str, cmdline: list[str]) -> str | None:
    """Which of KINDS a process is, from its name and command line (None: not counted)."""
    if name == "java":
        return "JVMs"
    if any("ipykernel_launcher" in part for part in cmdline):
        return "kernels"
    servers = ("jupyter-lab", "jupyter-notebook", "jupyter-server")
    if any(part.endswith(servers) for part in cmdline[:2]) or (
        cmdline[1:3] in (["-m", "jupyter"],) and cmdline[3:4] in (["lab"], ["notebook"], ["server"])
    ):
        return "Jupyter servers"
    # Chromium's own process; its renderers and helpers carry --type=.
    if "chrom" in name and not any(part.startswith("--type=") for part in cmdline):
        return "browsers"
    return None


def processes_started() -> dict[tuple[int, float], str]:
    """This process's descendants of a counted kind, by (pid, start time)."""
    found = {}
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return {}
    for child in children:
        try:
            kind = kind_of(child.name(), child.cmdline())
            if kind is not None:
                found[(child.pid, child.create_time())] = kind
        except psutil.Error:  # ended between the listing and the look
            continue
    return found


class ProcessCensus:
    """Samples this process's descendants until ``stop``; ``counts`` says how many of
    each kind were seen."""

    def __init__(self, interval: float = 0.3) -> None:
        self._interval = interval
        self._seen: dict[tuple[int, float], str] = {}
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="process-census", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> dict[str, int]:
        self._stopped.set()
        self._thread.join(5)
        self._sample()
        return self.counts()

    def counts(self) -> dict[str, int]:
        with self._lock:
            found = Counter(self._seen.values())
        return {kind: found.get(kind, 0) for kind in KINDS}

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        found = processes_started()
        with self._lock:
            self._seen.update(found)


def summary_line(counts: dict[str, int]) -> str:
    return "processes started: " + ", ".join(f"{counts[k]} {k}" for k in KINDS)

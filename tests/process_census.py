"""Counts what a test run starts: kernels, JVMs, Jupyter servers and browsers, the start-ups
where a kernel-level suite spends most of its time. A thread samples the run's process
tree (once a second; every one of these lives for seconds at least) and counts
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


#: A process seen: its name when looked at, and its kind (None: not counted).
Seen = tuple[str, "str | None"]


def processes_started(
    known: dict[tuple[int, float], Seen] | None = None,
) -> dict[tuple[int, float], Seen]:
    """This process's descendants by (pid, start time), each with its name and kind.
    ``known``: the answer of an earlier call; a process in it is looked at again only if
    its name changed (an exec: spark-class's bash becomes the JVM), since reading every
    command line at each sample cost the run CPU seconds."""
    known = known or {}
    found: dict[tuple[int, float], Seen] = {}
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return {}
    for child in children:
        try:
            key, name = (child.pid, child.create_time()), child.name()
            earlier = known.get(key)
            if earlier is not None and earlier[0] == name:
                found[key] = earlier
            else:
                found[key] = (name, kind_of(name, child.cmdline()))
        except psutil.Error:  # ended between the listing and the look
            continue
    return found


class ProcessCensus:
    """Samples this process's descendants until ``stop``; ``counts`` says how many of
    each kind were seen."""

    def __init__(self, interval: float = 1.0) -> None:
        self._interval = interval
        self._seen: dict[tuple[int, float], Seen] = {}
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
            found = Counter(kind for _, kind in self._seen.values() if kind is not None)
        return {kind: found.get(kind, 0) for kind in KINDS}

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            known = dict(self._seen)
        found = processes_started(known)
        with self._lock:
            self._seen.update(found)


def summary_line(counts: dict[str, int]) -> str:
    return "processes started: " + ", ".join(f"{counts[k]} {k}" for k in KINDS)

"""How many CPU seconds each test module cost: on a machine of two cores, which the
suite keeps busy, a module's CPU time is what its place in `make test`'s wall time
costs, where its wall time also counts waiting. Per module, the CPU time of the pytest
process, of the processes it started and waited for, and of its live descendants
(kernels, JVMs, servers, browsers) is read before its first test and after its last
(module fixtures' teardown included: read when the next module starts); the difference
goes to the module. A process that outlives its module (the run's shared kernel) is
counted where its time is spent. (Read per test, as it once was, the walks of every
process cost the run CPU seconds of their own.)"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest


def cpu_seconds() -> float:
    """CPU time of this process, its waited-for children and its live descendants."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    for process in psutil.Process().children(recursive=True):
        try:
            times = process.cpu_times()
        except psutil.Error:  # ended between the listing and the look
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


class CpuPerModule:
    """A pytest plugin: CPU seconds per module, written as JSON beside the JUnit XML
    (``<xml>.cpu.json``; from xdist's workers through the controller)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, float] = defaultdict(float)
        self._module: str | None = None
        self._started = 0.0
        #: When each module ran, on which worker: (worker, module, start, end), epoch
        #: seconds. Where the pytest run's wall time went besides its tests (start-up,
        #: collection, the end) and how busy each worker was.
        self.spans: list[tuple[str, str, float, float]] = []
        self._started_at = self._session_started = time.time()

    def _enter(self, module: str | None) -> None:
        """Close the running module's count and start ``module``'s (None: the end)."""
        if module == self._module:
            return
        now, wall = cpu_seconds(), time.time()
        if self._module is not None:
            # A descendant that ended unwaited takes its time along: never below 0.
            self.seconds[self._module] += max(0.0, now - self._started)
            worker = getattr(self.config, "workerinput", {}).get("workerid", "main")
            self.spans.append((worker, self._module, self._started_at, wall))
        self._module, self._started, self._started_at = module, now, wall

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[Any]:
        self._enter(item.nodeid.split("::")[0])
        return (yield)

    def pytest_sessionfinish(self) -> None:
        self._enter(None)
        if hasattr(self.config, "workerinput"):  # an xdist worker: to the controller
            self.config.workeroutput["cpu_per_module"] = json.dumps(self.seconds)
            self.config.workeroutput["module_spans"] = json.dumps(self.spans)
        else:
            self._write()

    def pytest_testnodedown(self, node: Any) -> None:  # the controller, per worker
        found = json.loads(getattr(node, "workeroutput", {}).get("cpu_per_module", "{}"))
        for module, seconds in found.items():
            self.seconds[module] += seconds
        spans = json.loads(getattr(node, "workeroutput", {}).get("module_spans", "[]"))
        self.spans.extend(tuple(span) for span in spans)

    def _write(self) -> None:
        xml = self.config.getoption("xmlpath", None)
        if xml:
            path = Path(xml).with_suffix(".cpu.json")
            path.write_text(json.dumps(dict(sorted(self.seconds.items())), indent=1))
            spans = {
                "session": [self._session_started, time.time()],
                "modules": sorted(self.spans, key=lambda span: span[2]),
            }
            Path(xml).with_suffix(".spans.json").write_text(json.dumps(spans, indent=0))

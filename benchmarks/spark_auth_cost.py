"""The cost of ``spark.authenticate=true`` (on by default for contexts this project
starts on ``local``/``local[...]``, issue 40): one session's 20,000-task JVM-only job,
authentication on against off, same run. Each mode gets a context of its own (and so
a JVM of its own: the registry's shutdown ends the JVM it started), in ABBA order after
one unmeasured context that warms the disk cache; each context runs a 200-task job
before the measured one. Target: median on / median off <= 1.02.

Run: ``python benchmarks/spark_auth_cost.py``; writes results/spark_auth_cost.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

TASKS, ROUNDS, TARGET = 20_000, 4, 1.02
RESULTS = Path(__file__).parent / "results" / "spark_auth_cost.json"


def registry_on(authenticate: str) -> Any:
    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig

    conf = {"spark.ui.enabled": "false", "spark.authenticate": authenticate}
    config = SparkSessionsConfig(default_master="local[2]", context_conf=conf)
    return SparkSessionsApp(config).registry


def job_seconds(mode: str) -> float:
    """A new context with ``spark.authenticate=mode``: its 20,000-task job's wall time."""
    registry = registry_on(mode)
    try:
        registry.create("solo")
        session = registry.session("solo")
        on = session.sparkContext.getConf().get("spark.authenticate")
        assert on == mode, (on, mode)
        session.range(0, 200, 1, 200).write.format("noop").mode("overwrite").save()
        job = session.range(0, TASKS, 1, TASKS).write.format("noop").mode("overwrite")
        started = time.monotonic()
        job.save()
        return time.monotonic() - started
    finally:
        registry.shutdown()


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    load_before = os.getloadavg()
    warm_up = job_seconds("false")
    print(f"warm-up (off): {warm_up:.2f} s", flush=True)
    seconds: dict[str, list[float]] = {"true": [], "false": []}
    for i in range(ROUNDS):
        for mode in ("true", "false") if i % 2 == 0 else ("false", "true"):
            seconds[mode].append(job_seconds(mode))
            print(f"round {i + 1}: authenticate={mode} {seconds[mode][-1]:.2f} s", flush=True)
    on, off = statistics.median(seconds["true"]), statistics.median(seconds["false"])
    result = {
        "benchmark": "spark_auth_cost",
        "tasks": TASKS,
        "rounds": ROUNDS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "on_s_median": on,
        "off_s_median": off,
        "ratio": on / off,
        "target": TARGET,
        "meets_targets": on / off <= TARGET,
        "seconds": seconds,
        "warm_up_s": warm_up,
        "load_average_1m": {"before": load_before[0], "after": os.getloadavg()[0]},
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

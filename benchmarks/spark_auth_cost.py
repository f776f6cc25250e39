"""The cost of ``spark.authenticate=true`` (on by default for contexts this project
starts on ``local``/``local[...]``, issue 40): one session's 20,000-task JVM-only job,
authentication on against off, a context each, in ABBA order after one context to warm
the JVM, same run. Target: <= 1.02x.

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

TASKS, ROUNDS = 20_000, 4
RESULTS = Path(__file__).parent / "results" / "spark_auth_cost.json"


def registry_on(authenticate: str) -> Any:
    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig

    conf = {"spark.ui.enabled": "false", "spark.authenticate": authenticate}
    config = SparkSessionsConfig(default_master="local[2]", context_conf=conf)
    return SparkSessionsApp(config).registry


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    seconds: dict[str, list[float]] = {"true": [], "false": []}
    orders = [("false",)] + [
        ("true", "false") if i % 2 == 0 else ("false", "true") for i in range(ROUNDS)
    ]
    for round_number, order in enumerate(orders):
        for mode in order:
            registry = registry_on(mode)
            try:
                registry.create("solo")
                session = registry.session("solo")
                on = session.sparkContext.getConf().get("spark.authenticate")
                assert on == mode, (on, mode)
                job = session.range(0, TASKS, 1, TASKS).write.format("noop").mode("overwrite")
                session.range(0, 200, 1, 200).write.format("noop").mode("overwrite").save()
                started = time.monotonic()
                job.save()
                if round_number:  # the first context only warms the JVM
                    seconds[mode].append(time.monotonic() - started)
            finally:
                registry.shutdown()
    on, off = statistics.median(seconds["true"]), statistics.median(seconds["false"])
    result = {
        "tasks": TASKS,
        "on_s": on,
        "off_s": off,
        "ratio": on / off,
        "rounds": seconds,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""Per-session Python environments: what building one costs, and what running a UDF in
one costs.

Build: an environment with one small package (a local wheel, so the network does not
decide the figure), built by this project (uv, into an empty cache) and then taken from
the cache, against what a user would do by hand: ``python -m venv`` then ``pip install``
of the same wheel. Target: from the cache <= 1 s.

UDF: a Python UDF over 1,000,000 rows (``x + 1``, summed so that the UDF runs), in a
session whose UDFs run in such an environment against a session on the kernel's own
interpreter, on one ``local[2]`` context, alternating. Target: <= 1.1x.

Run: ``python benchmarks/session_env.py`` (``make bench`` runs every benchmark).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tiny_wheels import make_wheel

RESULTS = Path(__file__).parent / "results" / "session_env.json"
ROUNDS = 3
ROWS = 1_000_000


def build_times(work: Path, wheel: Path) -> dict[str, list[float]]:
    from jupyter_spark_sessions.sessions.python_envs import EnvironmentCache, Requirements

    times: dict[str, list[float]] = {"first": [], "cached": [], "venv_pip": []}
    wanted = Requirements((str(wheel),))
    for round_ in range(ROUNDS):
        cache = EnvironmentCache(work / f"cache-{round_}")
        started = time.perf_counter()
        cache.get_or_build(wanted, lambda line: None)
        times["first"].append(time.perf_counter() - started)
        started = time.perf_counter()
        cache.get_or_build(wanted, lambda line: None)
        times["cached"].append(time.perf_counter() - started)
        target = work / f"venv-{round_}"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        subprocess.run(
            [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
            check=True,
        )
        times["venv_pip"].append(time.perf_counter() - started)
    return times


def udf_times(work: Path, wheel: Path) -> dict[str, list[float]]:
    from pyspark.sql import functions as F

    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig
    from jupyter_spark_sessions.sessions.python_envs import requirements

    config = SparkSessionsConfig(
        default_master="local[2]",
        context_conf={"spark.ui.enabled": "false"},
        env_cache_dir=str(work / "udf-cache"),
    )
    registry = SparkSessionsApp(config).registry
    try:
        sessions = {
            "kernel": registry.create("kernel_python").session,
            "env": registry.create(
                "own_env", packages=requirements([str(wheel)], [], str(work))
            ).session,
        }
        plus_one = F.udf(lambda x: x + 1, "long")

        def run(session: Any) -> float:
            started = time.perf_counter()
            df = session.range(0, ROWS, 1, 2).select(plus_one("id").alias("v"))
            total = df.agg(F.sum("v")).collect()[0][0]
            assert total == ROWS * (ROWS + 1) // 2
            return time.perf_counter() - started

        for session in sessions.values():  # the Python workers of each, started once
            run(session)
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for _ in range(ROUNDS):
            for name, session in sessions.items():
                times[name].append(run(session))
        return times
    finally:
        registry.shutdown()


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="jss-bench-env-"))
    try:
        wheel = make_wheel(work, "jsstiny", "1.0")
        build = build_times(work, wheel)
        udf = udf_times(work, wheel)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {k: statistics.median(v) for k, v in {**build, **udf}.items()}
    result = {
        "benchmark": "session_env",
        "rounds": ROUNDS,
        "rows": ROWS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "build_s": build,
        "udf_s": udf,
        "median_s": median,
        "udf_ratio": median["env"] / median["kernel"],
        "meets_targets": median["cached"] <= 1.0 and median["env"] / median["kernel"] <= 1.1,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["median_s"], indent=2), f"ratio {result['udf_ratio']:.3f}")


if __name__ == "__main__":
    main()

"""The diagnosis on a corpus of planted cases and healthy jobs of the same shapes.

One kernel (``tests/kernel_driver.py``) on ``local-cluster[2,1,1024]`` (two executor
processes of one slot each, so a straggling executor can be planted) with
``diagnosis_min_seconds`` 1 and the other thresholds at their defaults. Each case is one
cell; what is judged is its final in-cell view (the saved summary): the findings shown
under its group.

Planted (each should get its line, naming one of the cell's stages and its line of code):

- ``skew``: 16 partitions, one of them 50 times the others' rows (a sleep per row);
- ``spill``: 300,000 rows sorted in 2 shuffle partitions, with Spark's
  ``spark.shuffle.spill.numElementsForceSpillThreshold`` at 5,000 (what memory pressure
  does: a sort past a real executor's memory would take minutes here);
- ``partitions``: one partition for two slots;
- ``straggler``: 16 even tasks, each 6 times longer on executor 1 (a Python worker knows
  its executor by its working folder, ``.../<app>/<executor id>/...``);
- ``retried``: 8 tasks, one of which fails its first attempt (then succeeds).

Healthy (no line expected): the same shapes without the plant (even partitions, a sort
that fits, 8 partitions, the same speed on both executors, no failure).

A hit is a planted case whose expected line is there and names a stage of the cell's
group (``stage N (... at In [k] line m)``); a false alarm, any line on a healthy job, or
a line of another kind on a planted one.

Run: ``python benchmarks/diagnosis_corpus.py`` (``--rounds N``: the corpus N times).
Writes benchmarks/results/diagnosis_corpus.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from jupyter_spark_sessions.cells.progress import MIME_TYPE
from kernel_driver import Kernel, start_with_profile  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "diagnosis_corpus.json"

CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local-cluster[2,1,1024]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.showConsoleProgress': 'false', "
    "'spark.shuffle.spill.numElementsForceSpillThreshold': '5000'}\n"
    "c.SparkSessionsConfig.diagnosis_min_seconds = 1.0\n"
)

SETUP = """%spark_session create a
%spark_session use a
import os, re, time
from pyspark import TaskContext
sc = spark.sparkContext
def _sleep_each(x, seconds=0.05):
    time.sleep(seconds)
    return x
def _slower_on_executor_1(x):
    # An executor's working folder is .../<app id>/<executor id>[/<session folder>].
    on_1 = re.search(r"/app-[^/]+/1(/|$)", os.getcwd()) is not None
    time.sleep(0.6 if on_1 else 0.1)
    return x
def _fails_once(x):
    context = TaskContext.get()
    if context.partitionId() == 3 and context.attemptNumber() == 0:
        raise RuntimeError("planted failure")
    time.sleep(0.2)
    return x
sc.parallelize(range(8), 8).map(_sleep_each).count()"""

SORT = """spark.conf.set("spark.sql.shuffle.partitions", "2")
(spark.range(0, {rows}, 1, 2).selectExpr("id % 1000 AS k", "id AS v").sort("k", "v")
    .write.format("noop").mode("overwrite").save())
spark.conf.unset("spark.sql.shuffle.partitions")"""

#: (name, planted kind or "" for healthy, the cell).
CASES = (
    (
        "skew",
        "skew",
        "sc.parallelize(range(16), 16).flatMap(lambda p: [p] * (50 if p == 0 else 1))"
        ".map(_sleep_each).count()",
    ),
    (
        "even",
        "",
        "sc.parallelize(range(16), 16).flatMap(lambda p: [p] * 4).map(_sleep_each).count()",
    ),
    ("spill", "spill", SORT.format(rows=300_000)),
    ("sort that fits", "", SORT.format(rows=2_000)),
    ("one partition", "partitions", "sc.parallelize(range(30), 1).map(_sleep_each).count()"),
    ("eight partitions", "", "sc.parallelize(range(64), 8).map(_sleep_each).count()"),
    (
        "straggler",
        "straggler",
        "sc.parallelize(range(16), 16).map(_slower_on_executor_1).count()",
    ),
    (
        "same speed",
        "",
        "sc.parallelize(range(16), 16).map(lambda x: _sleep_each(x, 0.2)).count()",
    ),
    ("retried", "retried", "sc.parallelize(range(8), 8).map(_fails_once).count()"),
    (
        "no failure",
        "",
        "sc.parallelize(range(8), 8).map(lambda x: _sleep_each(x, 0.2)).count()",
    ),
)

#: What marks each kind of line (diagnosis.py's wording).
KINDS = {
    "skew": "skewed keys",
    "spill": " to disk ",
    "partitions": "too few partitions",
    "straggler": "a slow or busy machine",
    "retried": "and ran again",
    "gc": "GC took",
}
NAMED = re.compile(r"^stage (\d+) \(.* at In \[\d+\] line \d+\)")


def kind_of(line: str) -> str:
    return next((kind for kind, mark in KINDS.items() if mark in line), "other")


def judge(planted: str, group: dict[str, Any]) -> dict[str, Any]:
    inside = group.get("inside") or {}
    stage_ids = {row["id"] for row in inside.get("stages", [])}
    lines = list(inside.get("findings", []))
    kinds = [kind_of(line) for line in lines]
    named = [
        bool((m := NAMED.match(line)) and int(m[1]) in stage_ids)
        for line in lines
        if kind_of(line) == planted
    ]
    return {
        "lines": lines,
        "hit": bool(planted) and any(named),
        "false_alarms": [line for line, kind in zip(lines, kinds, strict=True) if kind != planted],
    }


def final_group(kernel: Kernel, code: str) -> dict[str, Any]:
    result = kernel.ok(code)
    shown = [c["data"][MIME_TYPE] for _, c in result.displays if MIME_TYPE in c["data"]]
    assert shown and shown[-1]["final"], "no final in-cell view"
    groups = shown[-1]["groups"]
    assert len(groups) == 1, groups
    return dict(groups[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="jss-bench-diagnosis-"))
    (scratch / "ipython").mkdir()
    (scratch / "cwd").mkdir()
    kernel = start_with_profile(scratch / "ipython", CONFIG, scratch / "cwd", None)
    runs = []
    try:
        kernel.ok(SETUP)
        for round_number in range(1, args.rounds + 1):
            for name, planted, code in CASES:
                verdict = judge(planted, final_group(kernel, code))
                runs.append({"round": round_number, "case": name, "planted": planted, **verdict})
                print(json.dumps(runs[-1]), flush=True)
    finally:
        kernel.shutdown()
    planted_runs = [r for r in runs if r["planted"]]
    healthy_runs = [r for r in runs if not r["planted"]]
    summary = {
        "benchmark": "diagnosis_corpus",
        "master": "local-cluster[2,1,1024]",
        "rounds": args.rounds,
        "planted": len(planted_runs),
        "hits": sum(r["hit"] for r in planted_runs),
        "healthy": len(healthy_runs),
        "false_alarms_on_healthy": sum(bool(r["false_alarms"]) for r in healthy_runs),
        "other_lines_on_planted": sum(bool(r["false_alarms"]) for r in planted_runs),
        "by_case": {
            name: {
                "hits": sum(r["hit"] for r in runs if r["case"] == name),
                "with_false_alarm": sum(bool(r["false_alarms"]) for r in runs if r["case"] == name),
                "runs": sum(1 for r in runs if r["case"] == name),
                "planted": planted,
            }
            for name, planted, _ in CASES
        },
        "measured_at": time.strftime("%Y-%m-%d"),
        "runs": runs,
    }
    summary["meets_targets"] = (
        summary["hits"] == summary["planted"]
        and summary["false_alarms_on_healthy"] == 0
        and summary["other_lines_on_planted"] == 0
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    sys.exit(main())

"""SQL cells (issue 37): a ``%%spark_sql`` cell against the PySpark a user would write
instead, in the same real kernel, timed as a frontend sees them.

One kernel (``tests/kernel_driver.py``; its IPython profile: ``local[2]``, the Spark UI
and console progress off), ``%load_ext jupyter_spark_sessions``, ``%spark_session create
a``, ``%spark_session use a``. Each cell is timed from sending its ``execute_request``
until its ``execute_reply`` and its displayed output (the magic's table, the baseline's
``execute_result``) have both arrived at the client; a wrong or missing output fails the
run. Each pair of rows warms both cells up, then runs them in ABBA order (magic,
baseline, baseline, magic, ...) for ``--rounds`` cells of each.

Figures:

- time to the table, ``-n 20``, for a 1,000,000-row query ``Q`` against the cell
  ``spark.sql(Q).limit(20).toPandas()`` (its value displayed: pandas' HTML, as a user
  sees it), in the session's default conf (PySpark 4.3's: Arrow on for ``toPandas``;
  the JSON records it). Two queries: ``scan`` (Spark stops reading once it has the rows
  shown) and ``sorted`` (the same rows ``ORDER BY s DESC``: every row is read and
  ranked, Spark's top-K, before the first is shown); and ``scan`` again with Arrow off
  (under Arrow, ``limit(20).toPandas()`` runs Spark's limit as a stage of its own, which
  the magic's ``collect()`` does not: without Arrow both take the rows the same way, and
  the figure is the magic's own cost). Target: median ratio <= 1.1 each.
- ``-o`` of 100,000 rows: ``%%spark_sql a -o out -q --max-rows 100000`` against
  ``out = spark.sql(Q).toPandas()``, with ``spark.sql.execution.arrow.pyspark.enabled``
  set to true in session a (and its fallback off, so a cell that could not use Arrow
  fails) for both. Two queries of 100,000 rows: ``range`` (``range(100000)``: Spark
  knows the result has no more rows than ``--max-rows``, and its optimizer drops the
  magic's cap) and ``filtered`` (every tenth row of ``range(1000000)``: Spark cannot
  know, so the cap stays in the plan, as for a table). Target: median ratio <= 1.1 each.

Each figure's spread: per side the quartiles and range, and the ratio of each magic cell
to the baseline cell next to it (their quartiles and range), so drift on a loaded
machine shows apart from a real difference.

Run: ``python benchmarks/sql_cell.py`` (``--rounds N``; ``--quick``: 4 rounds, results to
a temp file). Writes benchmarks/results/sql_cell.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kernel_driver import Kernel, start_with_profile  # the tests' driver of real kernels

RESULTS = Path(__file__).parent / "results" / "sql_cell.json"
PROGRESS = "application/vnd.jupyter-spark-sessions.cell+json"  # cells/progress.py's
TARGET = 1.1
WARM_UP = 3  # unmeasured cells of each side before a figure's rounds

KERNEL_CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
)

COLUMNS = "SELECT id, id * 2 AS doubled, CAST(id AS STRING) AS s FROM range({rows})"
SCAN = COLUMNS.format(rows=1_000_000)
#: name: (query, Arrow for toPandas in session a: None is the session's default).
ROW1_FIGURES: dict[str, tuple[str, str | None]] = {
    "scan": (SCAN, None),
    "sorted": (SCAN + " ORDER BY s DESC", None),
    "scan_arrow_off": (SCAN, "false"),
}
ARROW = "spark.sql.execution.arrow.pyspark.enabled"
ROW2_QUERIES = {
    "range": COLUMNS.format(rows=100_000),
    "filtered": COLUMNS.format(rows=1_000_000) + " WHERE id % 10 = 0",
}
ARROW_ON = (
    "spark.conf.set('spark.sql.execution.arrow.pyspark.enabled', 'true')\n"
    "spark.conf.set('spark.sql.execution.arrow.pyspark.fallback.enabled', 'false')"
)


@dataclass(frozen=True)
class Timed:
    """One cell as the client saw it."""

    #: From the execute_request until its reply and its output (the table, the value)
    #: both arrived.
    ms: float
    reply_ms: float
    #: The cell's displayed outputs (display_data and execute_result contents), but for
    #: the in-cell progress view, whose messages are only counted.
    outputs: tuple[dict[str, Any], ...]
    progress_messages: int


def run_cell(kernel: Kernel, code: str, timeout: float = 300) -> Timed:
    """Send ``code`` and time it: each message is stamped as it reaches the client (one
    poller over the shell and IOPub sockets, so neither waits behind the other)."""
    client = kernel.client
    shell, iopub = client.shell_channel, client.iopub_channel
    poller = zmq.Poller()
    poller.register(shell.socket, zmq.POLLIN)
    poller.register(iopub.socket, zmq.POLLIN)
    started = time.perf_counter()
    msg_id = client.execute(code)
    reply: dict[str, Any] | None = None
    reply_at = output_at = started
    outputs: list[dict[str, Any]] = []
    progress = 0
    idle = False
    deadline = started + timeout
    while reply is None or not idle:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"{code!r} did not finish within {timeout} s")
        ready = dict(poller.poll(int(remaining * 1000) + 1))
        if shell.socket in ready:
            msg = shell.get_msg(timeout=0)
            if msg["parent_header"].get("msg_id") == msg_id:
                reply, reply_at = msg, time.perf_counter()
        if iopub.socket in ready:
            msg = iopub.get_msg(timeout=0)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind in ("display_data", "update_display_data") and PROGRESS in msg["content"].get(
                "data", {}
            ):
                progress += 1  # the in-cell progress view (both sides are bound cells)
            elif kind in ("display_data", "execute_result"):
                outputs.append(msg["content"])
                output_at = time.perf_counter()
            elif kind == "error":
                raise RuntimeError(f"{code!r} failed: {msg['content']['evalue']}")
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                idle = True
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed: {reply['content']}")
    return Timed(
        ms=(max(reply_at, output_at) - started) * 1000,
        reply_ms=(reply_at - started) * 1000,
        outputs=tuple(outputs),
        progress_messages=progress,
    )


# ---- what each cell must have shown ----------------------------------------------------


def _html(timed: Timed) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in timed.outputs)


def shows_sql_table(rows: int) -> Callable[[Timed], None]:
    def check(timed: Timed) -> None:
        html = _html(timed)
        caption = f"showing the first {rows} rows"
        if "jss-sql-result" not in html or caption not in html or html.count("<tr") != rows + 1:
            raise AssertionError(f"the magic showed no {rows}-row table: {timed.outputs!r:.500}")

    return check


def shows_pandas_table(rows: int) -> Callable[[Timed], None]:
    def check(timed: Timed) -> None:
        html = _html(timed)
        if "dataframe" not in html or html.count("<tr") != rows + 1:
            raise AssertionError(f"pandas showed no {rows}-row table: {timed.outputs!r:.500}")

    return check


def shows_nothing(timed: Timed) -> None:
    if timed.outputs:
        raise AssertionError(f"expected no output: {timed.outputs!r:.500}")


# ---- one figure: warm-up, ABBA rounds, summary ------------------------------------------


def measure(
    kernel: Kernel,
    cells: dict[str, tuple[str, Callable[[Timed], None]]],
    rounds: int,
) -> dict[str, Any]:
    """``cells``: {"magic": (code, check), "baseline": (code, check)}; ``rounds`` cells
    of each, in ABBA order after ``WARM_UP`` of each."""
    for _ in range(WARM_UP):
        for side in ("magic", "baseline"):
            code, check = cells[side]
            check(run_cell(kernel, code))
    times: dict[str, list[float]] = {"magic": [], "baseline": []}
    replies: dict[str, list[float]] = {"magic": [], "baseline": []}
    progress: dict[str, int] = {"magic": 0, "baseline": 0}
    for number in range(rounds):
        order = ("magic", "baseline") if number % 2 == 0 else ("baseline", "magic")
        for side in order:
            code, check = cells[side]
            timed = run_cell(kernel, code)
            check(timed)
            times[side].append(timed.ms)
            replies[side].append(timed.reply_ms)
            progress[side] += timed.progress_messages > 0
    return {**summarize(times, replies), "cells_with_progress_view": progress}


def _spread(values: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(values, n=4)
    return {
        "median": statistics.median(values),
        "p25": quartiles[0],
        "p75": quartiles[2],
        "min": min(values),
        "max": max(values),
    }


def summarize(times: dict[str, list[float]], replies: dict[str, list[float]]) -> dict[str, Any]:
    magic, baseline = times["magic"], times["baseline"]
    paired = [m / b for m, b in zip(magic, baseline, strict=True)]  # same ABBA pair
    ratio = statistics.median(magic) / statistics.median(baseline)
    return {
        "magic_ms": _spread(magic),
        "baseline_ms": _spread(baseline),
        "ratio": ratio,
        "paired_ratio": _spread(paired),
        "added_ms": statistics.median(magic) - statistics.median(baseline),
        "reply_ms_median": {side: statistics.median(v) for side, v in replies.items()},
        "times_ms": times,
        "meets_target": ratio <= TARGET,
    }


def _print(name: str, figure: dict[str, Any]) -> None:
    m, b, p = figure["magic_ms"], figure["baseline_ms"], figure["paired_ratio"]
    print(
        f"{name:12} magic {m['median']:8.1f} ms [{m['p25']:.1f}-{m['p75']:.1f}]  "
        f"baseline {b['median']:8.1f} ms [{b['p25']:.1f}-{b['p75']:.1f}]  "
        f"ratio {figure['ratio']:.3f} (pairs {p['p25']:.2f}-{p['p75']:.2f})",
        file=sys.stderr,
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=48, help="timed cells of each side")
    parser.add_argument("--quick", action="store_true", help="4 rounds, to a temp file")
    parser.add_argument("--output", type=Path, help="where to write the JSON result")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 4
    output = args.output or (
        Path(tempfile.gettempdir()) / "sql_cell.quick.json" if args.quick else RESULTS
    )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    base = Path(tempfile.mkdtemp(prefix="jss-bench-sql-"))
    load_before = os.getloadavg()[0]
    kernel = start_with_profile(base / "ipython", KERNEL_CONFIG, cwd=base)
    try:
        kernel.ok("%spark_session create a", timeout=240)
        kernel.ok("%spark_session use a\nspark.range(3).collect()")
        arrow_default = kernel.value(f"spark.conf.get({ARROW!r})")
        display_rows = {}
        for name, (query, arrow) in ROW1_FIGURES.items():
            kernel.ok(
                f"spark.conf.set({ARROW!r}, {arrow!r})" if arrow else f"spark.conf.unset({ARROW!r})"
            )
            display_rows[name] = measure(
                kernel,
                {
                    "magic": (f"%%spark_sql a -n 20\n{query}", shows_sql_table(20)),
                    "baseline": (
                        f"spark.sql({query!r}).limit(20).toPandas()",
                        shows_pandas_table(20),
                    ),
                },
                args.rounds,
            )
            display_rows[name]["arrow"] = arrow or arrow_default
            _print(f"-n 20 {name}", display_rows[name])
        kernel.ok(ARROW_ON)
        output_rows = {}
        for name, query in ROW2_QUERIES.items():
            magic = f"%%spark_sql a -o out -q --max-rows 100000\n{query}"
            output_rows[name] = measure(
                kernel,
                {
                    "magic": (magic, shows_nothing),
                    "baseline": (f"out = spark.sql({query!r}).toPandas()", shows_nothing),
                },
                args.rounds,
            )
            _print(f"-o {name}", output_rows[name])
            # Both sides give the same frame: the magic's, against toPandas() afresh.
            run_cell(kernel, magic)
            same = f"bool(out.equals(spark.sql({query!r}).toPandas())) and len(out) == 100000"
            if not kernel.value(same):
                raise AssertionError(f"-o and toPandas() gave different frames ({name})")
    finally:
        kernel.shutdown()
        shutil.rmtree(kernel._spec_root, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
    result: dict[str, Any] = {
        "benchmark": "sql_cell",
        "rounds": args.rounds,
        "warm_up": WARM_UP,
        "quick": bool(args.quick),
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
        "master": "local[2]",
        "row1_queries": {name: query for name, (query, _) in ROW1_FIGURES.items()},
        "row1_arrow_enabled": arrow_default,
        "row2_queries": ROW2_QUERIES,
        "display_rows": display_rows,
        "output_rows": output_rows,
        "target": TARGET,
    }
    figures = [*display_rows.values(), *output_rows.values()]
    result["meets_targets"] = all(figure["meets_target"] for figure in figures)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("display_rows", "output_rows")}))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()

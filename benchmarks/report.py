"""Render docs/benchmarks.md from the JSON results the benchmarks wrote."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

# Renderers of the larger benchmarks live beside them (benchmarks/ is on sys.path when
# this script runs).
import board_overhead_render
import board_scale_render
import cell_overhead_render
import fair_share_render
import shared_driver_soak_render

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

INTRO = """# Benchmarks

Targets are ratios against a baseline measured in the same run on the same machine, so
they hold on slower or faster hardware. Run them with `make bench` (it rewrites this
page from `benchmarks/results/*.json`). Figures below are from the last run that was
committed; the machine was a 2-core Linux VM (Python 3.11, OpenJDK 17, PySpark 4.3).
"""


def _cancel_latency(r: dict[str, Any]) -> str:
    returns = f"{r['request_return_ms_median']:.3f} ms (max {r['request_return_ms_max']:.3f} ms)"
    return f"""## Cancel latency (`benchmarks/cancel_latency.py`)

A cancel request for one job group, through the same request handler the kernel's
control thread runs, against a direct `SparkContext.cancelJobsWithTag` of the same kind
of job (one task of a Python UDF sleeping for minutes, `local[2]`), alternating, {r["rounds"]}
rounds each. "To end" is until the job's `collect()` raised Spark's cancellation error.

| figure | measured | target |
|---|---|---|
| request returns (median) | {returns} | < 5 ms |
| request -> end, via the board (median) | {r["board_request_to_end_ms_median"]:.1f} ms | |
| `cancelJobsWithTag` -> end, direct (median) | {r["direct_cancel_to_end_ms_median"]:.1f} ms | |
| ratio board / direct | {r["ratio"]:.2f} | <= 1.2 |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _artifacts(r: dict[str, Any]) -> str:
    unpack, extract, ratio = r["unpack_s_median"], r["extractall_s_median"], r["archive_ratio"]
    copy = (
        f"{r['add_file_s_median']:.3f} s / {r['copyfile_s_median']:.3f} s = {r['file_ratio']:.2f}"
    )
    memory = f"peak memory growth while adding {r['rounds']} x {r['file_mb']} MB"
    rows = "\n".join(
        f"| {r['entries']:,}-entry {kind}: unpack_archive / extractall | "
        f"{unpack[kind]:.2f} s / {extract[kind]:.2f} s = {ratio[kind]:.2f} | <= 2 |"
        for kind in sorted(unpack)
    )
    return f"""## Adding files and archives (`benchmarks/artifacts.py`)

`add_file` of a {r["file_mb"]} MB file to a session on `local[2]` (copy into the session
directory, registration with the session's Spark artifact manager) against
`shutil.copyfile` of the same file; archive validation and unpacking (`unpack_archive`)
against the standard library's `extractall` of the same archive. Medians of {r["rounds"]}
alternating rounds.

| figure | measured | target |
|---|---|---|
| add_file / copyfile | {copy} | <= 1.5 |
| Spark alone: `addArtifact` of a staged copy | {r["spark_register_s_median"]:.3f} s | |
| add_file / (copyfile + Spark's registration) | {r["file_ratio_vs_copy_plus_spark"]:.2f} | |
| {memory} | {r["peak_memory_growth_mb"]:.1f} MB | < 64 MB |
{rows}
| whole add_archive of the tar.gz (unpack + hash + register) | {r["add_archive_tar_gz_s"]:.2f} s | |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).

Why `add_file` cannot reach 1.5x `copyfile`: Spark's `SparkContext.addFile`, which the
session artifact manager calls, always copies the file once more into the driver's
SparkFiles folder ("so that closures run on the driver can use SparkFiles"), and that
copy alone costs more than `copyfile` (row 2). `add_file` makes exactly one copy of its
own (the snapshot of your file that the session keeps) and hands it to Spark by hard
link and rename; the last ratio shows it adds nothing beyond those two copies. Dropping
our copy (hard-linking your original) would make a later in-place edit of your file
change what the session ships, so we keep it.
"""


def _connect_cancel_latency(r: dict[str, Any]) -> str:
    returns = f"{r['request_return_ms_median']:.3f} ms (max {r['request_return_ms_max']:.3f} ms)"
    observed = f"{r['board_request_to_observed_ms_median']:.1f} ms"
    return f"""## Cancel latency, Spark Connect (`benchmarks/connect_cancel_latency.py`)

The same measurement for a Spark Connect session on a local Connect server (`--remote
local`, `local[2]`): a board cancel request (which the board's producer turns into
`interruptTag` on its own thread) against a direct `SparkSession.interruptTag`,
alternating, {r["rounds"]} rounds each. "Observed" is until the board shows the group
"cancelled" (what the sidebar and the panel show).

| figure | measured | target |
|---|---|---|
| request returns (median) | {returns} | < 5 ms |
| request -> end, via the board (median) | {r["board_request_to_end_ms_median"]:.1f} ms | |
| request -> observed "cancelled" on the board (median) | {observed} | |
| `interruptTag` -> end, direct (median) | {r["direct_interrupt_to_end_ms_median"]:.1f} ms | |
| ratio board / direct | {r["ratio"]:.2f} | <= 1.2 |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _kernel_shutdown(r: dict[str, Any]) -> str:
    median = r["shutdown_s_median"]
    return f"""## Kernel shutdown and restart (`benchmarks/kernel_shutdown.py`)

How long a kernel takes to shut down (what a restart waits for), {r["rounds"]} alternating
rounds of three real kernels: one that ran a query in a session of this project, one
that ran the same query with PySpark alone, one without Spark. ipykernel waits until
none of its child processes is left and counts a dead but unreaped JVM as one, so with
PySpark alone it re-signals for about 30 s (a Jupyter server kills such a kernel after
5 s); the extension reaps the JVM at shutdown.

| figure | measured | target |
|---|---|---|
| with jupyter_spark_sessions (median) | {median["extension"]:.2f} s | |
| PySpark alone (median) | {median["pyspark_alone"]:.2f} s | |
| no Spark (median) | {median["no_spark"]:.2f} s | |
| ratio extension / PySpark alone | {r["ratio"]:.2f} | <= 1.0 |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _test_suite(r: dict[str, Any]) -> str:
    def cell(seconds: float | None) -> str:
        return "" if seconds is None else f"{round(seconds) // 60}:{round(seconds) % 60:02d}"

    rows = "\n".join(
        f"| {name} | {cell(before)} | {cell(r['after'].get(name))} |"
        for name, before in r["before"].items()
        if name != "setup-all"  # the set-up row below
    )
    census = r["census"]
    counted = ", ".join(
        f"{target}: {c['kernels']} kernels, {c['JVMs']} JVMs, {c['Jupyter servers']} servers, "
        f"{c['browsers']} browsers"
        for target, c in census.items()
    )
    setup, setup_before = r["after"].get("setup-all"), r["before"].get("setup-all")
    whole = None if setup is None else setup + r["after"]["test"]
    whole_before = None if setup_before is None else setup_before + r["before"]["test"]
    return f"""## Test suite time (`make test`, `scripts/test_times.py --json`)

Wall time of `make test` per target on this 2-core machine (m:ss). Before: {r["before_source"]}.
After: a fresh-clone run of {r["measured_at"]}: the set-up first, then the test targets side
by side, so their rows overlap and `test` is their whole. Processes started (counted by
tests/process_census.py): {counted}. {r["notes"]}

| target | before | after |
|---|---:|---:|
| set-up | {cell(setup_before)} | {cell(setup)} |
{rows}
| **the whole run (set-up + test)** | {cell(whole_before)} | {cell(whole)} |

Target: the whole `.ci/run` (set-up included, as CI times it) under 15:00 (issue 47).
Met: **{"yes" if whole is not None and whole < 900 else "NO"}**.
"""


def _session_env(r: dict[str, Any]) -> str:
    m = r["median_s"]
    udf = f"{m['env']:.2f} s / {m['kernel']:.2f} s = {r['udf_ratio']:.2f}"
    return f"""## Per-session Python environments (`benchmarks/session_env.py`)

Building a session's environment with one small package (a local wheel: the network
does not decide the figure) by this project (uv, into an empty cache), then taking it
from the cache, against `python -m venv` + `pip install` of the same wheel; and a Python
UDF over {r["rows"]:,} rows (`x + 1`, summed) in a session whose UDFs run in such an
environment against a session on the kernel's interpreter, one `local[2]` context,
alternating. Medians of {r["rounds"]} rounds.

| figure | measured | target |
|---|---|---|
| first build (uv) | {m["first"]:.2f} s | |
| from the cache | {m["cached"] * 1000:.1f} ms | <= 1 s |
| `python -m venv` + `pip install`, for comparison | {m["venv_pip"]:.2f} s | |
| UDF over {r["rows"]:,} rows: own environment / kernel's Python | {udf} | <= 1.1 |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _spark_auth_cost(r: dict[str, Any]) -> str:
    on, off = r["seconds"]["true"], r["seconds"]["false"]
    spread = max(max(v) / min(v) - 1 for v in (on, off))
    load = r["load_average_1m"]
    runs_on, runs_off = (", ".join(f"{x:.1f}" for x in v) for v in (on, off))
    noisy = spread > r["target"] - 1  # the machine's noise, not the setting, sets the ratio
    caveat = (
        f"\nThat spread is above the target's {r['target'] - 1:.0%} margin: the ratio says"
        " only that no cost showed."
    ) * noisy
    return f"""## `spark.authenticate` on a local master (`benchmarks/spark_auth_cost.py`)

The {r["tasks"]:,}-task JVM-only job of one session on `local[2]` with
`spark.authenticate=true` (the default for contexts this project starts on `local` and
`local[...]`, issue 40) against `false`: a new context (and JVM) per run, {r["rounds"]} runs
each in ABBA order after one unmeasured context. The runs of one mode differ by up to
{spread:.0%} (1-minute load average {load["before"]:.1f} before, {load["after"]:.1f} after).{caveat}

| figure | measured | target |
|---|---|---|
| authentication on (median; runs: {runs_on} s) | {r["on_s_median"]:.2f} s | |
| authentication off (median; runs: {runs_off} s) | {r["off_s_median"]:.2f} s | |
| ratio on / off | {r["ratio"]:.3f} | <= {r["target"]} |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _spark_ui_route(r: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| `{p['path']}` | {p['route_ms_median']:.1f} ms | {p['direct_ms_median']:.1f} ms "
        f"| {p['added_ms_median']:+.1f} ms | {p['ratio']:.2f} |"
        for p in r["pages"].values()
    )
    return f"""## The Spark UI through the owner's route (`benchmarks/spark_ui_route.py`)

A page of a kernel's Spark UI (`local[2]`, a managed session that ran ten jobs) through
the Jupyter server's route `{r["base_url"]}spark-sessions/ui/<port>/` with the server's
token (which adds the UI's secret) against the UI's own port with the secret header,
{r["loads"]} loads each way, interleaved, after {r["warm_up_loads"]} unmeasured, each on a
new connection. No target: the ratio is reported.

| page | through the route (median) | direct (median) | added | ratio |
|---|---:|---:|---:|---:|
{rows}

Measured {r["measured_at"]}.
"""


_SQL_CELL_FIGURES = {
    "scan": "`-n 20` of `scan` / `spark.sql(q).limit(20).toPandas()`",
    "sorted": "`-n 20` of `sorted` / the same",
    "scan_arrow_off": "`-n 20` of `scan` / the same, Arrow off",
    "range": "`-o` 100,000 rows of `range` / `out = spark.sql(q).toPandas()`",
    "filtered": "`-o` 100,000 rows of `filtered` / the same",
}


def _sql_cell(r: dict[str, Any]) -> str:
    def row(name: str, f: dict[str, Any]) -> str:
        m, b, p = f["magic_ms"], f["baseline_ms"], f["paired_ratio"]
        measured = (
            f"{m['median']:.1f} / {b['median']:.1f} ms = {f['ratio']:.2f} "
            f"(pairs {p['p25']:.2f}-{p['p75']:.2f}, all {p['min']:.2f}-{p['max']:.2f})"
        )
        return f"| {_SQL_CELL_FIGURES.get(name, name)} | {measured} | <= {r['target']} |"

    figures = [*r["display_rows"].items(), *r["output_rows"].items()]
    rows = "\n".join(row(name, figure) for name, figure in figures)
    queries = {**r["row1_queries"], **r["row2_queries"]}
    query_lines = "\n".join(
        f"- `{name}`: `{q}`" for name, q in queries.items() if name != "scan_arrow_off"
    )
    load = r["load_average_1m"]
    return f"""## SQL cells (`benchmarks/sql_cell.py`)

`%%spark_sql` cells against the PySpark a user would write instead, in one kernel
(`local[2]`, UI off, `%spark_session use a`: both sides are bound cells of session a),
each timed from the `execute_request` until its reply and its output (the magic's
table, pandas' HTML of the baseline's value) reached the client. {r["rounds"]} cells of
each side in ABBA order after {r["warm_up"]} unmeasured; medians, and the ratio of each
magic cell to the baseline cell beside it (quartiles, all). `-n 20` runs in the
session's defaults (Arrow for `toPandas`: {r["row1_arrow_enabled"]}), and once more with
Arrow off; `-o` is `%%spark_sql a -o out -q --max-rows 100000` with
`spark.sql.execution.arrow.pyspark.enabled=true` (fallback off) in the session for both
sides. 1-minute load average {load["before"]:.1f} before, {load["after"]:.1f} after.

{query_lines}

| figure (magic / baseline) | measured | target |
|---|---|---|
{rows}

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).

Under Arrow, `toPandas()` of a limited DataFrame runs Spark's limit as a stage of its
own (each partition's first, or top, rows shuffled into one partition, which one task turns into
Arrow batches), while `collect()` of the same limit, which the magic's `-n` runs, needs
no such stage (Spark reads the first partitions only, or for `ORDER BY` merges each
partition's top rows in the driver): the `-n` baseline pays a stage the magic does not,
hence the row with Arrow off. `-o` caps its fetch at `--max-rows + 1` rows: when Spark
knows the query has no more rows (`range`) its optimizer drops the limit, and the magic
runs PySpark's own `toPandas()`, adding only its own few milliseconds; when it cannot
(`filtered`, as for any table), `limit().toPandas()` would pay that stage (1.57x
measured 2026-12-03). The magic's `toPandas()` takes its Arrow batches from
`jss.FirstRows` instead (`backends/first_rows.py`): where the limit sits on a plan
without a shuffle, as here, each task turns its partition's first rows into Arrow, as
`toPandas()` does, in waves of partitions as `collect()` reads them, and Python keeps
the limit's rows (1.16x while the driver converted the rows in one thread, until
2026-12-07); otherwise the driver takes the rows as `collect()` does and converts them.
A `-o -q` cell also no longer reads its rows as Python values for a table it does not
show, and a `%%spark_sql a` cell bound to a keeps the cell's tags on instead of setting
them again (four round trips to the JVM). Six runs of 2026-12-07 on this machine put
both `-o` rows between 1.00 and 1.12 (filtered: 1.02, 1.06, 1.12, 1.11, 1.02, 1.03;
range: 1.03, 1.00, 1.09, 1.07, 1.02, 1.11): a few milliseconds of the magic's own
against a cell of about 90 ms, within the spread of the pairs.
"""


def _streaming_cpu_note(r: dict[str, Any]) -> str:
    """Why the CPU target was missed, when it was."""
    run = r["running"]
    if run["cpu_ratio"] <= r["targets"]["cpu_ratio"]:
        return ""
    cpu = run["cpu_per_s_median"]
    added = cpu["sessions"] - cpu["none"]
    return f"""Why the CPU target is not met: watching the query costs {added:.3f} CPU seconds a
second ({added * 100:.1f}% of one core) over plain PySpark's {cpu["none"]:.3f}, whose query
itself is light. While a query runs the board polls once a second: the status store read
through py4j, three more py4j calls per query (`isActive`, `lastProgress`, `status`),
then one comm push and one update of the query's in-cell view. That cost is per poll,
not per batch (the messages above), so it is the same for a heavier query, where the
ratio shrinks. Polling every 2 s while only queries run would do that work half as
often (not done nor measured yet).

"""


def _streaming_queries(r: dict[str, Any]) -> str:
    run, stop, targets = r["running"], r["stopping"], r["targets"]
    figures = run["figures"]
    paired = run["cpu_paired_ratio"]
    cpu = run["cpu_per_s_median"]
    cpu_row = (
        f"{cpu['sessions']:.3f} / {cpu['none']:.3f} CPU s/s = {run['cpu_ratio']:.3f} "
        f"(pairs {paired['min']:.3f}-{paired['max']:.3f})"
    )
    batches = " / ".join(
        f"{figures[side]['batches_per_s']['median']:.2f}" for side in ("sessions", "none")
    )
    msgs = figures["sessions"]["board_msgs_per_min"]
    per_batch = figures["sessions"]["board_msgs_per_batch"]["median"]
    request, cell = stop["request_to_stopped_s"], stop["cell_stop_reply_s"]
    pushed = stop["push_stopped_s"]["request"]
    stop_row = (
        f"{pushed['median'] * 1000:.0f} / {cell['median'] * 1000:.0f} ms = {stop['ratio']:.2f}"
    )
    listed_row = f"{request['median'] * 1000:.0f} ms (/ the cell: {stop['list_ratio']:.2f})"
    msgs_row = f"{msgs['median']:.1f}, {msgs['max']:.1f} ({per_batch:.2f} a batch)"
    msgs_target = f"<= {targets['board_msgs_per_poll']} a poll, every window"
    # The no-monitor kernel's IOPub in its windows: the JVM's stderr (ipykernel forwards
    # it to the notebook; this project's kernel filters it).
    streams = [w["kinds"].get("stream", 0) for w in r["windows"] if w["side"] == "none"]
    returned = stop["request_returned_ms"]
    stop_target = f"<= {targets['stop_ratio']}"
    seen = stop["cell_board_shows_stopped_s"]
    load = r["load_average_1m"]
    minutes = r["window_s"] * r["windows_per_side"] / 60
    return f"""## Streaming queries (`benchmarks/streaming_queries.py`)

A query at {r["batches_per_s_asked"]} batches a second (`rate-micro-batch`, 10 rows a batch,
into a `memory` sink, triggered every 100 ms) in two kernels on `local[2]`: this
project's (a managed session, a comm subscribed as the sidebar does) and plain PySpark
with the same settings (as board_overhead's no-monitor kernel). {r["windows_per_side"]}
windows of {r["window_s"]:.0f} s per kernel ({minutes:.1f} minutes), alternating in ABBA
order, one query running at a time, each window a fresh query past its first
{r["warm_up_batches"]} batches; CPU is user + system of the kernel and its JVM. Then,
in this project's kernel, {r["stop_rounds"]} stops of each kind, alternating, each of a
fresh query: a `stop_query` request until the board's push (what the sidebar hears)
shows the query "stopped", against a cell `q.stop()` from its `execute_request` to its
reply (a `list` every {r["list_every_s"] * 1000:.0f} ms is reported beside it, not judged:
its polling adds half its period on average). Board messages are what the kernel sent on IOPub for
the board while the query ran: comm pushes to the subscribed comm and updates of the
query's in-cell view (one of each per poll at most, a poll a second while a query
runs). 1-minute load average {load["before"]:.1f} before, {load["after"]:.1f} after.

| figure | measured | target |
|---|---|---|
| CPU while the query runs: board / no monitor (medians) | {cpu_row} | <= {targets["cpu_ratio"]} |
| batches a second made: board / no monitor (medians) | {batches} | |
| board messages on IOPub a minute (median, max) | {msgs_row} | {msgs_target} |
| stop request -> push showing "stopped" / `q.stop()` cell (medians) | {stop_row} | {stop_target} |
| stop request returns (median, max) | {returned["median"]:.2f} ms, {returned["max"]:.2f} ms | |
| stop request -> `list` showing "stopped" (median) | {listed_row} | |
| `q.stop()` cell -> board shows "stopped" (median) | {seen["median"] * 1000:.0f} ms | |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).

The no-monitor kernel sent {sum(streams)} `stream` messages on IOPub in its windows
(median {statistics.median(streams or [0]):.0f} a window): the JVM's log lines on stderr
(`stream_samples` in the JSON), which ipykernel forwards to the notebook and this
project's kernel filters.

{_streaming_cpu_note(r)}A query stopped outside the board (the `q.stop()` cell) shows
"stopped" at the board's next read of its queries, up to
{r["query_poll_interval_s"]:.0f} s later; a stop request makes the board read them as
soon as `stop()` returns.
"""


def _shared_driver_notes(r: dict[str, Any]) -> str:
    """Why a target was missed (from the run's own breakdown), when one was."""
    notes = []
    first = r["first_result"]
    if not first["meets_target"]:
        shared = first["shared"][1:]
        create = statistics.mean(t["create_s"] for t in shared)
        query = statistics.mean(t["query_s"] for t in shared)
        notes.append(
            f"First result not met: on the shared server notebooks 2-{r['notebooks']} spent "
            f"{create:.2f} s in `create` (joining the server and opening a Spark Connect "
            f"session) and {query:.2f} s in the first query, on average."
        )
    mem = r["memory"]
    if not mem["meets_target"]:
        own, shared = mem["own"]["by_role_rss_mb"], mem["shared"]["by_role_rss_mb"]
        floor = shared["kernel"] / mem["own"]["rss_mb"]
        notes.append(
            f"Memory not met: the {r['notebooks']} kernels alone take {shared['kernel']:,.0f} MB "
            f"on the shared server (against {own['kernel']:,.0f} MB with own drivers), the "
            f"JVMs {shared['jvm']:,.0f} MB (against {own['jvm']:,.0f} MB). The kernels' own "
            f"memory, which sharing the driver does not remove, is {floor:.2f}x the own "
            "drivers' total by itself."
        )
    return "".join(f"\n{note}\n" for note in notes)


def _shared_driver(r: dict[str, Any]) -> str:
    first, mem, cost = r["first_result"], r["memory"], r["connect_cost"]
    n, targets = r["notebooks"], r["targets"]

    def met(ok: bool) -> str:
        return "met" if ok else "**NOT met**"

    per = ", ".join(f"{x:.2f}" for x in first["per_notebook_ratio"])
    first_row = (
        f"{first['shared_mean_2_to_n_s']:.2f} s / {first['own_mean_2_to_n_s']:.2f} s = "
        f"{first['ratio']:.3f} (per notebook: {per})"
    )
    moonshot = "met" if first["meets_moonshot"] else "not met"
    one_shared, one_own = first["shared"][0], first["own"][0]
    one_row = (
        f"{one_shared['total_s']:.2f} s / {one_own['total_s']:.2f} s = "
        f"{one_shared['total_s'] / one_own['total_s']:.2f}"
    )

    def memory_row(key: str) -> str:
        shared, own = mem["shared"][f"{key}_mb"], mem["own"][f"{key}_mb"]
        return f"{shared:,.0f} MB / {own:,.0f} MB = {shared / own:.3f}"

    def parts(side: str) -> str:
        roles = mem[side]["by_role_rss_mb"]
        shown = [f"kernels {roles['kernel']:,.0f}", f"JVMs {roles['jvm']:,.0f}"]
        shown += [f"{k} {roles[k]:,.0f}" for k in ("keeper", "other") if roles[k]]
        return f"{mem[side]['jvms']} JVM(s): " + ", ".join(shown) + " MB"

    def cost_row(label: str, figure: dict[str, Any]) -> str:
        m = figure["median"]
        spread = " / ".join(
            f"{min(x['action_s'] for x in figure['runs'][side]):.2f}-"
            f"{max(x['action_s'] for x in figure['runs'][side]):.2f}"
            for side in ("shared", "own")
        )
        return (
            f"| {label}: shared / classic (median in the cell) | "
            f"{m['shared']['action_s']:.2f} s / {m['own']['action_s']:.2f} s = "
            f"{figure['ratio_action']:.2f} (runs {spread} s; cell at the client: "
            f"{figure['ratio_cell']:.2f}) | none | |"
        )

    first_target = (
        f"<= {targets['first_result_ratio']} (moonshot {targets['first_result_moonshot']}) | "
        f"{met(first['meets_target'])} (moonshot {moonshot})"
    )
    memory_target = f"<= {targets['memory_ratio']} | {met(mem['meets_target'])}"
    cleanup = r["cleanup"]
    left = cleanup["left_running"]
    stopped = (
        "the keeper stopped on SIGTERM with its server"
        if cleanup.get("record_left") and not cleanup.get("killed_after_sigterm")
        else f"keeper and server: {cleanup}"
    )
    load = r["load_average_1m"]
    machine = r["machine"]
    others = r.get("other_processes", {})
    if others.get("their_cpu_cores_max", 0.0) >= 0.1:
        beside = (
            f" Other processes ({', '.join(others['kinds_seen'])}) ran beside it, using "
            f"{others['their_cpu_cores_mean']:.2f} cores on average (at most "
            f"{others['their_cpu_cores_max']:.2f}; above half a core in "
            f"{others['samples_above_half_a_core']} of {others['samples']} samples, 2 s apart)."
        )
    else:
        beside = " No other process used the CPU meanwhile (sampled every 2 s)." * bool(others)
    return f"""## Many notebooks, one driver (`benchmarks/shared_driver.py`)

{n} notebooks (real kernels, `%load_ext jupyter_spark_sessions`, the package's defaults
otherwise: Spark UI and in-cell progress on), opened one after another and left open:
first each with its own classic driver (`create nbK --master {r["master"]}`: {n} JVMs of
`{r["master"]}` each on this {machine["cpus"]}-core machine), then all on the user's
shared Spark Connect server (`create nbK --remote shared`, `{r["master"]}`; notebook 1
starts it), after one unmeasured kernel with its own driver. First result: from the
kernel being ready until the replies of the `create` cell and of a `%%spark_session nbK`
cell running `{r["first_query"]}`. Memory: RSS of the {n} kernels and every process below
them with all {n} open (own JVMs; the keeper and the server's JVM counted once), median of
3 samples. Spark Connect's cost: notebook 1's session on the shared server (the other
notebooks closed) against a classic session of a fresh kernel, {r["rounds"]} runs each in
ABBA order after one unmeasured, timed in the cell around the action: the 20,000-task
JVM-only job of `spark_auth_cost` (`{r["job"]}`) and `{r["to_pandas"]}` (no target: the
ratio is Spark Connect's own cost). One run; 1-minute load average {load["before"]:.1f}
before, {load["after"]:.1f} after.{beside}

| figure | measured | target | |
|---|---|---|---|
| notebooks 2-{n}, first result: shared / own drivers (means) | {first_row} | {first_target} |
| notebook 1, first result: shared (starts the server) / own driver | {one_row} | | |
| RSS with {n} notebooks open: shared / own drivers | {memory_row("rss")} | {memory_target} |
| PSS (shared pages counted once), same | {memory_row("pss")} | | |
{cost_row("20,000-task job", cost["job_20000_tasks"])}
{cost_row("1,000,000-row `toPandas()`", cost["to_pandas_1m_rows"])}

RSS by process: shared, {parts("shared")}; own drivers, {parts("own")}. At the end every
kernel was shut down and {stopped}; {len(left)} of the run's
{cleanup.get("processes_seen", 0)} processes left running.

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
{_shared_driver_notes(r)}"""


def _many_stages(r: dict[str, Any]) -> str:
    def memory(config: str) -> str:
        after = [run["kernel_rss_mb"] for run in r["runs"] if run["config"] == config]
        return " -> ".join(f"{mb:.1f}" for mb in after) + " MB"

    def board(figure: str) -> str:
        sizes = [run[figure] / 1024 for run in r["runs"] if figure in run]
        return " -> ".join(f"{mb:.2f}" for mb in sizes) + " MB" if sizes else "not measured"

    per_job = f"+{r.get('board_kb_growth_per_job', 0):.0f} KB a job: the ended group kept"
    per_job_target = "<= 5% of the first a job, up to `retained_groups`"
    board_before = f"; before the first: {r.get('board_kb_before', 0):.0f} KB"
    rss_before = f"before the first: {r['kernel_rss_mb_before']:.1f} MB"
    wall = (
        f"{r['wall_s_sessions_median']:.1f} s / {r['wall_s_none_median']:.1f} s = "
        f"{r['wall_ratio_median']:.3f}"
    )
    rate = f"<= {r['rate_limit']:.0f} (two views, one per poll each)"
    largest = f"{r['largest_cell_view_bytes'] / 1024:.1f} KB"
    return f"""## A job of {r["stages"]:,} stages (`benchmarks/many_stages.py`)

One RDD job of {r["stages"]:,} stages ({r["tasks"]:,} tasks: the union of {r["stages"] - 1:,}
one-partition shuffles, side by side; a chain of 2,000 shuffles overflows the stack of
Spark's own DAG scheduler, with or without a monitor) under a cell, `local[2]`,
{r["rounds"]} rounds in alternating order: plain PySpark against this project with the
in-cell view on and the sidebar's comm subscribed. What the views were sent counts from
the cell's start until they went quiet; the largest in-cell output is what the saved
notebook keeps (the final one). The kernel's memory is its Python process's resident
size (the JVM is a child) after each job, in both kernels (Python's allocator keeps
what it freed: no measure of what is held); the board's memory is what the job board
holds (its groups, jobs, stages' figures and snapshot: the objects reached from it,
summed with `sys.getsizeof`), right after each job and again later, in the kernel: most
of it is the figures of the last 2,000 stages the board reads (a fixed bound, whatever
the number of jobs), the rest the ended groups it keeps (`retained_groups`, 50).

| figure | measured | target |
|---|---|---|
| cell wall: this project / plain PySpark (median) | {wall} | |
| messages to the views (median) | {r["msgs_median"]:,.0f} ({r["bytes_median"] / 2**20:.2f} MB) | |
| messages a second, the most of a run | {r["msgs_per_s_max"]:.2f} | {rate} |
| largest in-cell output | {largest} | < {r["output_limit"] / 1024:.0f} KB |
| board memory after each job | {board("board_kb")} ({per_job}{board_before}) | {per_job_target} |
| the same, {r.get("idle_s", 0):.0f} s later | {board("board_kb_idle")} | no growth |
| kernel memory after each job: this project | {memory("sessions")} ({rss_before}) | |
| the same, plain PySpark | {memory("none")} | |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _diagnosis_corpus(r: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| {name} | {case['planted'] or 'healthy'} | "
        + (f"{case['hits']} of {case['runs']}" if case["planted"] else "")
        + f" | {case['with_false_alarm']} of {case['runs']} |"
        for name, case in r["by_case"].items()
    )
    return f"""## The diagnosis on planted cases (`benchmarks/diagnosis_corpus.py`)

Each case is one cell on `{r["master"]}` (two executor processes of one slot each),
judged by its saved summary's findings; the corpus ran {r["rounds"]} times. A hit: the
planted kind's line, naming one of the cell's stages and its line of code. A false
alarm: any line on a healthy job, or a line of another kind on a planted one.

| case | planted | hits | runs with a false alarm |
|---|---|---|---|
{rows}

Planted: {r["hits"]} hits of {r["planted"]}; healthy: {r["false_alarms_on_healthy"]} of
{r["healthy"]} with a line; planted with a line of another kind: {r["other_lines_on_planted"]}.
Targets (every plant found, no false alarm) met: **{"yes" if r["meets_targets"] else "NO"}**
(measured {r["measured_at"]}).
"""


def _sql_completion(r: dict[str, Any]) -> str:
    names = {
        "idle": "idle",
        "after_a_cell": "first Tab after a cell",
        "beside_a_job": "beside a job",
    }
    rows = []
    for size, cases in r["catalogs"].items():
        for case, label in names.items():
            f = cases[case]
            met = "met" if f["p95_ms"] < r["target_p95_ms"] else "**not met**"
            rows.append(
                f"| {int(size):,} | {label} | {f['p50_ms']:.1f} | {f['p95_ms']:.1f} | "
                f"{f['max_ms']:.1f} | {met} |"
            )
    table = "\n".join(rows)
    load = r["load_average_1m"]
    return f"""## Tab in a SQL cell (`benchmarks/sql_completion.py`)

A real kernel's `complete_request` round trip, as a frontend sees it, in a
`%%spark_sql a` cell (`local[2]`), on catalogs of one-row temp views; {r["samples"]}
requests per case, rotating over a table after `FROM`, a column after `WHERE` and a
function name, each answer checked. *First Tab after a cell*: a cell ran before each
request, so the catalog is read again (the Tab waits 25 ms for that read at most, then
answers with what was read before). *Beside a job*: a job of the same session (two
tasks sleeping {r["job_seconds"]:.0f} s, started from a thread of the kernel: a frontend
sends no request to a kernel's shell while one of its cells runs) runs during the
requests. 1-minute load average {load["before"]:.1f} before, {load["after"]:.1f} after.

| tables | case | p50 ms | p95 ms | max ms | p95 < {r["target_p95_ms"]:.0f} ms |
|---|---|---|---|---|---|
{table}

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _shared_driver_prewarm(r: dict[str, Any]) -> str:
    warm = [x["warm_after_server_start_s"] for x in r["prewarmed"]]
    jvm = [x["idle_memory"]["jvm_mb"] for x in r["prewarmed"]]
    keeper = [x["idle_memory"]["keeper_mb"] for x in r["prewarmed"]]
    stops = [x["idle_stop_s"] for x in r["prewarmed"] if x["idle_stop_s"] is not None]
    each = ", ".join(f"{x['first_result_s']:.2f}" for x in r["prewarmed"])
    each_plain = ", ".join(f"{x['first_result_s']:.2f}" for x in r["plain"])
    first, ratio = r["first_result_s"], r["first_result_ratio"]
    load = r["load_average_1m"]
    stop_line = (
        f"{stops[-1]:.1f} s after its only notebook shut down (idle timeout "
        f"{r['idle_timeout_s']:.0f} s in this run; 600 s by default)"
        if stops
        else "not measured"
    )
    targets = r["targets"]
    rows = [
        (
            "first result, pre-warmed / plain (medians)",
            f"{first['prewarmed']:.2f} / {first['plain']:.2f} s = {ratio:.3f} "
            f"(each: {each} / {each_plain} s)",
            f"<= {targets['first_result_ratio']} (moonshot {targets['first_result_moonshot']})",
        ),
        (
            "driver warm after the Jupyter server started",
            f"{statistics.median(warm):.1f} s (median; {min(warm):.1f}-{max(warm):.1f})",
            "",
        ),
        (
            "RSS of the warm idle driver",
            f"JVM {statistics.median(jvm):.0f} MB, keeper {statistics.median(keeper):.0f} MB "
            "(medians)",
            "",
        ),
        ("the idle driver stopped", stop_line, ""),
    ]
    table = "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)
    met = "yes" if r["meets_target"] else "NO"
    moonshot = "yes" if r["meets_moonshot"] else "no"
    return f"""## The shared driver's warm start (`benchmarks/shared_driver_prewarm.py`)

The first notebook's first result with `shared_driver_prewarm = True` (a real Jupyter
server started the shared driver, `{r["master"]}`, before any notebook; a fresh one each
round) against plain PySpark's own driver (a kernel without the extension), each from
the kernel being ready until the reply of `create a --remote shared` and a
`sum(id)` query (pre-warmed), or of one cell with `getOrCreate()` and the same query
(plain). {r["rounds"]} rounds of each in ABBA order after one unmeasured plain run.
1-minute load average {load["before"]:.1f} before, {load["after"]:.1f} after.

| figure | measured | target |
|---|---|---|
{table}

Target met: **{met}**; moonshot: {moonshot} (measured {r["measured_at"]}).

The pre-warming keeper runs a first query before it says the driver runs (in the
background: `shared_driver/warm_up.py`): an aggregate, a grouping, a join, SQL and rows
to pandas, as first cells do. The measured query (a sum) is of a kind it warmed; with a
warm-up of `range(10).count()` and `SELECT 1` only, the same run measured 2.18 s (0.254):
a first query of a kind not warmed (a UDF, a file read) pays its own first time.
"""


def _connect_client_cost(r: dict[str, Any]) -> str:
    ext, plain = r["median"]["extension"], r["median"]["plain"]
    spread = {
        side: f"{min(x['in_cell_s'] for x in runs):.2f}-{max(x['in_cell_s'] for x in runs):.2f}"
        for side, runs in r["runs"].items()
    }
    job = (
        f"{ext['job_in_cell_s']:.2f} s / {plain['job_in_cell_s']:.2f} s = "
        f"**{r['job_ratio']:.3f}** (runs {spread['extension']} / {spread['plain']} s; "
        f"at the client {r['job_cell_ratio']:.3f})"
    )
    empty = (
        f"{ext['empty_cell_ms']:.1f} ms / {plain['empty_cell_ms']:.1f} ms: "
        f"+{r['empty_cell_extra_ms']:.1f} ms"
    )
    load = r["load_average_1m"]
    met = "yes" if r["meets_target"] else "NO"
    title = "The extension's own cost on a Connect session"
    return f"""## {title} (`benchmarks/connect_client_cost.py`)

One shared-driver server (`local[2]`), two real kernels on it: a session with the
extension (`create a --remote shared`, then `use a`: every cell bound, the board and the
in-cell progress at work) against a plain Spark Connect client
(`SparkSession.builder.remote(url).getOrCreate()`, no extension loaded), {r["rounds"]} runs
each in ABBA order after one unmeasured each. 1-minute load average {load["before"]:.1f}
before, {load["after"]:.1f} after.

| figure | measured | target |
|---|---|---|
| 20,000-task job, in the cell: extension / plain (medians) | {job} | <= {r["target"]} |
| an empty cell at the client (medians of 30) | {empty} | |

Target met: **{met}** (measured {r["measured_at"]}). The load average counts the runs'
own two busy slots (about 2 to 4); before each run the server's heap is collected
(`jcmd GC.run`), so that the status store the runs before left (up to Spark's 100,000
retained tasks) weighs on both sides alike.

History: 1.048 beside the hour's soak (2026-12-06), then 1.145 and 1.191 on a quiet
machine: the board's reads of the server's REST API were the cost. On the 20,000-task
stage a read of the active stages took the server 76 ms (read every second) and a task
summary 345 ms (every 5 s), about 30% of one of its two cores. Since then a read waits
at least 25 times as long as the last one took (a new or ended stage is read at once):
`READ_SHARE` in backends/server_stages.py.
"""


def _python_worker_start(r: dict[str, Any]) -> str:
    m, target = r["median"], r["target"]
    runs = {side: ", ".join(f"{x['cpu_s']:.2f}" for x in rows) for side, rows in r["runs"].items()}
    cpu = f"{m['spark']['cpu_s']:.2f} s | {m['ours']['cpu_s']:.2f} s | {r['cpu_ratio']:.2f}"
    job = f"{m['spark']['job_s']:.2f} s | {m['ours']['job_s']:.2f} s | {r['job_ratio']:.2f}"
    return f"""## Python workers' start (`benchmarks/python_worker_start.py`)

A new `local[2]` context per round, then the first job of a trivial Python UDF over two
partitions (a daemon and two workers start); the CPU time of those three processes and
the job's wall time, with Spark's daemon (`pyspark.daemon`: PySpark imported from
Spark's `pyspark.zip`, compiled in every process) against this project's
(`backends/spark_daemon.py`: the installed, compiled copy of the same release).
{r["rounds"]} rounds each in ABBA order after one unmeasured round of each; medians.
CPU per round, Spark's: {runs["spark"]} s; this project's: {runs["ours"]} s.

| figure | Spark's daemon | this project's | ratio | target |
|---|---|---|---|---|
| CPU of the daemon and two workers | {cpu} | <= {target} |
| the UDF's first job, wall | {job} | |

Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


RENDERERS = {
    "connect_client_cost": _connect_client_cost,
    "sql_completion": _sql_completion,
    "diagnosis_corpus": _diagnosis_corpus,
    "many_stages": _many_stages,
    "session_env": _session_env,
    "python_worker_start": _python_worker_start,
    "board_overhead": board_overhead_render.render,
    "board_overhead_big": board_overhead_render.render_big,
    "board_scale": board_scale_render.render,
    "cell_overhead": cell_overhead_render.render,
    "cancel_latency": _cancel_latency,
    "fair_share": fair_share_render.render,
    "connect_cancel_latency": _connect_cancel_latency,
    "artifacts": _artifacts,
    "kernel_shutdown": _kernel_shutdown,
    "test_suite": _test_suite,
    "spark_auth_cost": _spark_auth_cost,
    "spark_ui_route": _spark_ui_route,
    "sql_cell": _sql_cell,
    "shared_driver": _shared_driver,
    "shared_driver_prewarm": _shared_driver_prewarm,
    "shared_driver_soak": shared_driver_soak_render.render,
    "streaming_queries": _streaming_queries,
}


def main() -> None:
    sections = [INTRO]
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        render = RENDERERS.get(result.get("benchmark", ""))
        if render is not None:
            sections.append(render(result))
    PAGE.write_text("\n".join(sections))
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()

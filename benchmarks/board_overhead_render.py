"""The docs/benchmarks.md section of ``benchmarks/board_overhead.py``'s result."""

from __future__ import annotations

from typing import Any

CONFIGS = ("none", "sessions", "sparkmonitor")
JOBS = {
    "tasks": "tasks job",
    "cpu": "CPU job",
    "big": "big job",
}


def _seconds(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f} s"


def _ratio(ratio: dict[str, float] | None) -> str:
    if ratio is None:
        return ""
    if ratio["min"] == ratio["max"]:
        return f" (x{ratio['median']:.2f})"
    return f" (x{ratio['median']:.2f}, {ratio['min']:.2f}-{ratio['max']:.2f})"


def _messages(figure: dict[str, Any]) -> str:
    count, size = figure["monitor_msgs_median"], figure["monitor_bytes_median"]
    if not count:
        return "0"
    text = f"{count:,.0f} ({size / 1e6:.2f} MB)"
    views = figure.get("cell_view_msgs_median")
    if views:
        view_mb = figure["cell_view_bytes_median"] / 1e6
        text += f", of which the in-cell view {views:,.0f} ({view_mb:.2f} MB)"
    return text


def _quiet(figure: dict[str, Any]) -> str:
    text = _seconds(figure["quiet_after_end_s_median"], 1)
    if not figure["drained_every_time"]:
        text += " (still sending when the wait ended)"
    return text


def _rows(result: dict[str, Any], kind: str) -> list[str]:
    figures, ratios = result["figures"][kind], result["ratios"][kind]
    label = JOBS[kind]
    single = kind == "big" and figures.get("sessions", {}).get("n", 1) <= 1
    tag = "" if single else " (median)"

    def cells(render: Any, ratio_key: str | None = None) -> str:
        out = []
        for name in CONFIGS:
            figure = figures.get(name)
            if figure is None:
                out.append("")
                continue
            text = render(figure)
            if ratio_key and name != "none":
                text += _ratio(ratios[name][ratio_key])
            out.append(text)
        return " | ".join(out)

    wall_target = (
        f"ratio <= {result['targets']['sessions_tasks_wall_ratio']}" if kind == "tasks" else ""
    )
    lag_target = f"<= {result['poll_interval_s']} s (poll interval)"
    monitor_only = {"none": "-"}

    def lag(figure: dict[str, Any]) -> str:
        if figure["lag_s_median"] is None and not figure["drained_every_time"]:
            return f"not within {result['sizes']['drain_limit_s']:.0f} s"
        return _seconds(figure["lag_s_median"])

    def quiet(figure: dict[str, Any]) -> str:
        return _quiet(figure)

    return [
        f"| {label}: wall time{tag} | {cells(lambda f: _seconds(f['wall_s_median']), 'wall_s')}"
        f" | {wall_target} |",
        f"| {label}: CPU, kernel + JVM{tag} | "
        f"{cells(lambda f: _seconds(f['cpu_s_median']), 'cpu_s')} | |",
        f"| {label}: monitor messages on IOPub{tag} | {cells(_messages)} | |",
        f"| {label}: lag, job end -> shown ended{tag} | "
        f"{_monitor_cells(figures, lag, monitor_only)} | {lag_target} |",
        f"| {label}: job end -> last message{tag} | "
        f"{_monitor_cells(figures, quiet, monitor_only)} | |",
    ]


def _monitor_cells(figures: dict[str, Any], render: Any, fixed: dict[str, str]) -> str:
    return " | ".join(
        fixed[name] if name in fixed else (render(figures[name]) if name in figures else "")
        for name in CONFIGS
    )


def render(result: dict[str, Any]) -> str:
    """The markdown section for ``result`` (the JSON ``board_overhead.py`` wrote)."""
    sizes, jobs = result["sizes"], result["jobs"]
    rows = [row for kind in JOBS if kind in result["figures"] for row in _rows(result, kind)]
    empty = result["empty_cell_ms_median"]
    empty_ratio = result["empty_cell_ratio"]
    rows.append(
        "| empty cell `x = 1`, round trip (median) | "
        + " | ".join(
            f"{empty[name]:.2f} ms" + ("" if name == "none" else _ratio(empty_ratio[name]))
            for name in CONFIGS
        )
        + " | |"
    )
    per_cell = result.get("empty_cell_monitor_msgs_per_cell")
    if per_cell:
        rows.append(
            "| empty cell: monitor messages per cell | "
            + " | ".join(f"{per_cell[name]:.1f}" for name in CONFIGS)
            + " | |"
        )
    table = "\n".join(rows)
    quick = (
        "\n\nA `--quick` development run (small jobs): not for comparison."
        if result.get("quick")
        else ""
    )
    big_skipped = (
        ""
        if "big" in result["figures"]
        else "; left out of this run (`--skip-big`): see its own run (`--big-only`) below"
    )
    return f"""## Board overhead beside sparkmonitor (`benchmarks/board_overhead.py`)

What watching Spark jobs from a frontend costs. Three real kernels, each with its own
`local[2]` context, in {result["rounds"]} paired round(s) (the kernels' order rotates
every round; one job runs at a time):

- no monitor: PySpark with the context settings this project uses, so only the monitor
  differs;
- jupyter_spark_sessions: a managed session bound to `spark`, and a comm subscribed to
  board updates, as the JupyterLab sidebar has;
- sparkmonitor 3.3.0: its kernel extension and JVM listener, its comm opened as its
  frontend opens it.

Jobs, all JVM-only:

- tasks job ({sizes["tasks"]:,} tasks): `{jobs["tasks"]}`
- CPU job: `{jobs["cpu"]}`
- big job ({sizes["big_tasks"]:,} tasks, once per kernel{big_skipped}): `{jobs["big"]}`

Wall time is the cell's, from execute_request to the idle status; CPU is user + system
of the kernel and its JVM over the cell (this project: with the in-cell progress view
shown and the sidebar's comm subscribed); messages are what the monitor sent on
IOPub for the job (bytes: every frame). Lag runs from the moment `save()` returned to
when the monitor showed the job ended (this project: the first board push from which on
the cell's group stays final; sparkmonitor: its `sparkJobEnd` message). "Last message"
is how long after the job's end the monitor kept sending; the next job waited for
{sizes["quiet_s"]:.0f} s of quiet, at most {sizes["drain_limit_s"]:.0f} s after the
cell. In brackets: median and range of the per-round ratios to no monitor.{quick}

| figure | no monitor | jupyter_spark_sessions | sparkmonitor 3.3.0 | target |
|---|---|---|---|---|
{table}

Targets met: **{"yes" if result["meets_targets"] else "NO"}** (measured {result["measured_at"]}).
"""


def _big_runs(result: dict[str, Any]) -> str:
    figures = result["figures"]["big"]
    ours = figures.get("sessions", {}).get("n", 1)
    if ours <= 1:
        return (
            "One run each, in the order no monitor, this project, sparkmonitor: a ratio (in "
            "brackets) is one pair, not a median."
        )
    return (
        f"No monitor and this project {ours} runs each, in rounds of opposite order (no "
        "monitor first, then this project first: the drift over the run cancels out of the "
        "median of the paired ratios, in brackets with their range); then sparkmonitor "
        "once, last (its backlog spills into no other run), its ratio against the first "
        "no-monitor run."
    )


def render_big(result: dict[str, Any]) -> str:
    """The section of a ``board_overhead.py --big-only`` result: the 200,000-task job,
    once per kernel, to show whether a monitor's cost and lag grow with the task count."""
    sizes, jobs = result["sizes"], result["jobs"]
    rows = "\n".join(_rows(result, "big"))
    verdict = "yes" if result["meets_targets"] else "NO"
    return f"""## The 200,000-task job (`benchmarks/board_overhead.py --big-only`)

The kernels and settings of the section above, in a run of their own: the
{sizes["big_tasks"]:,}-task job, `{jobs["big"]}`. Set beside the
20,000-task job above, it shows whether the cost and the lag grow with the task count
(sparkmonitor's stream was cut off {sizes["drain_limit_s"]:.0f} s after the cell, still
sending). {_big_runs(result)} A wall ratio carries the machine's drift over the run (on
this 2-core VM, paired rounds of the 20,000-task job spread 0.8-1.2); the CPU ratio is
the steadier figure of a monitor's cost.

| figure | no monitor | jupyter_spark_sessions | sparkmonitor 3.3.0 | target |
|---|---|---|---|---|
{rows}

Lag within one poll interval: **{verdict}** (measured {result["measured_at"]}).
"""

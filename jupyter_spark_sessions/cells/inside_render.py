"""The static renderings of what happened inside a group (``board.group_inside``): text
lines and HTML with an inline SVG slot chart. They are what a saved notebook keeps in
the cell's output (its ``text/html`` and ``text/plain``), so the notebook reopened
without the extension, exported with nbconvert or run headless still shows the stages,
the chart and the findings. Pure; every figure escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ..sizes import size_text

#: The chart's drawing size (px): small, under the summary line.
CHART_WIDTH, LANE_HEIGHT = 360, 28


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.2f} s" if seconds < 1 else f"{seconds:.1f} s"


def stage_figures_text(row: Mapping[str, Any]) -> str:
    """``input 1.2 MiB · shuffle read 3.0 MiB · spill 12 MiB (disk) · slowest task 9.8 s,
    median 0.10 s``: the figures that are not zero."""
    parts = []
    for key, label in (
        ("input_bytes", "input"),
        ("shuffle_read_bytes", "shuffle read"),
        ("shuffle_write_bytes", "shuffle write"),
    ):
        if row[key]:
            parts.append(f"{label} {size_text(row[key])}")
    spills = [
        f"{size_text(row[key])} {where}"
        for key, where in (("memory_spilled_bytes", "memory"), ("disk_spilled_bytes", "disk"))
        if row[key]
    ]
    if spills:
        parts.append("spill " + ", ".join(spills))
    if row["max_task_seconds"] is not None:
        slowest = f"slowest task {seconds_text(row['max_task_seconds'])}"
        if row["median_task_seconds"] is not None:
            slowest += f", median {seconds_text(row['median_task_seconds'])}"
        parts.append(slowest)
    return " · ".join(parts)


def stage_line(row: Mapping[str, Any]) -> str:
    """``stage 3 count at In [4] line 2 · 200/200 tasks · 12.1 s · ...``."""
    status = "" if row["status"] in ("complete", "active") else f" {row['status']}"
    head = f"stage {row['id']}{status} {row['name']}".rstrip()
    tasks = f"{_task_counts(row)} tasks"
    parts = [head, tasks, seconds_text(row["elapsed"]), stage_figures_text(row)]
    return " · ".join(p for p in parts if p)


def hidden_stages_text(inside: Mapping[str, Any]) -> str:
    """``and 12 more stages · 2 skipped (their output was reused)``; "" for none."""
    parts = []
    if inside["more_stages"]:
        parts.append(f"{inside['more_stages']:,} more stages not shown")
    if inside["skipped_stages"]:
        parts.append(f"{inside['skipped_stages']:,} skipped (their output was there already)")
    if inside["unknown_stages"]:
        parts.append(
            f"{inside['unknown_stages']:,} gone before the board read them "
            "(Spark keeps a bounded number of ended stages)"
        )
    return " · ".join(parts)


def inside_lines(inside: Mapping[str, Any] | None) -> list[str]:
    """The text rendering: a line per stage row, the hidden ones, the findings."""
    if not inside:
        return []
    lines = [f"  {stage_line(row)}" for row in inside["stages"]]
    hidden = hidden_stages_text(inside)
    if hidden:
        lines.append(f"  {hidden}")
    lines += [f"  ! {finding}" for finding in inside["findings"]]
    return lines


def inside_html(inside: Mapping[str, Any] | None) -> str:
    """The HTML rendering: the stage rows as a table, the chart, the findings."""
    if not inside:
        return ""
    rows = "".join(
        "<tr>"
        f"<td>{row['id']}</td><td>{html.escape(row['name'])}</td>"
        f"<td>{html.escape(_tasks_cell(row))}</td><td>{seconds_text(row['elapsed'])}</td>"
        f"<td>{html.escape(stage_figures_text(row))}</td>"
        "</tr>"
        for row in inside["stages"]
    )
    parts = []
    if rows:
        parts.append(
            '<table class="jss-stages"><thead><tr><th>stage</th><th>code</th><th>tasks</th>'
            f"<th>time</th><th>figures</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    hidden = hidden_stages_text(inside)
    if hidden:
        parts.append(f"<div><small>{html.escape(hidden)}</small></div>")
    if inside["chart"]:
        parts.append(chart_svg(inside["chart"]))
    parts += [f"<div><strong>{html.escape(f)}</strong></div>" for f in inside["findings"]]
    # Collapsed unless the diagnosis found something (as the extension shows it).
    stages = len(inside["stages"]) + inside["more_stages"]
    summary = f"{stages} stage{'' if stages == 1 else 's'}" if stages else "slot chart"
    if inside["findings"]:
        count = len(inside["findings"])
        summary += f" · {count} finding{'' if count == 1 else 's'}"
    opened = " open" if inside["findings"] else ""
    return f"<details{opened}><summary>{html.escape(summary)}</summary>{''.join(parts)}</details>"


def _task_counts(row: Mapping[str, Any]) -> str:
    """``190/200 (2 running), 1 failed``."""
    text = f"{row['done']:,}/{row['total']:,}"
    if row["active"]:
        text += f" ({row['active']} running)"
    if row["failed"]:
        text += f", {row['failed']} failed"
    return text


def _tasks_cell(row: Mapping[str, Any]) -> str:
    ended = "" if row["status"] in ("complete", "active") else f" {row['status']}"
    return _task_counts(row) + ended


def chart_svg(chart: Mapping[str, Any]) -> str:
    """One lane per executor: its running tasks (filled) under its slots (the lane's
    top), across the group's life; a tick where each stage started."""
    start, end = float(chart["start"]), float(chart["end"])
    span = max(end - start, 0.001)
    lanes = list(zip(chart["executors"], chart["slots"], strict=True))
    height = LANE_HEIGHT * max(1, len(lanes))

    def x(t: float) -> float:
        return round((t - start) / span * CHART_WIDTH, 1)

    shapes = []
    for lane, (executor, slots) in enumerate(lanes):
        top = lane * LANE_HEIGHT
        bottom = top + LANE_HEIGHT - 4
        scale = max(slots, max((s[1][lane] for s in chart["samples"]), default=0), 1)
        # A sample holds its count from its time until the next (the last: the end).
        samples = chart["samples"]
        points = [f"{x(samples[0][0]) if samples else 0},{bottom}"]
        for i, (t, counts) in enumerate(samples):
            y = round(bottom - counts[lane] / scale * (LANE_HEIGHT - 6), 1)
            until = samples[i + 1][0] if i + 1 < len(samples) else end
            points += [f"{x(t)},{y}", f"{x(until)},{y}"]
        points.append(f"{x(end)},{bottom}")
        shapes.append(
            f'<rect x="0" y="{bottom - (LANE_HEIGHT - 6)}" width="{CHART_WIDTH}" '
            f'height="{LANE_HEIGHT - 6}" fill="none" stroke="#999" stroke-dasharray="2,2"/>'
            f'<polygon points="{" ".join(points)}" fill="#4a90d9" fill-opacity="0.6"/>'
            f'<text x="{CHART_WIDTH + 4}" y="{bottom - 4}" font-size="10">'
            f"{html.escape(str(executor))}: {slots} slot{'' if slots == 1 else 's'}</text>"
        )
    for t, stage in chart["stage_marks"]:
        shapes.append(
            f'<line x1="{x(t)}" y1="0" x2="{x(t)}" y2="{height}" stroke="#d9822b"/>'
            f'<text x="{x(t) + 2}" y="9" font-size="9" fill="#d9822b">{int(stage)}</text>'
        )
    label = (
        f"Running tasks per executor against its task slots over {seconds_text(span)}; "
        "orange ticks: stage starts"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{CHART_WIDTH + 110}" '
        f'height="{height}" viewBox="0 0 {CHART_WIDTH + 110} {height}">'
        f"<title>{html.escape(label)}</title>{''.join(shapes)}</svg>"
    )

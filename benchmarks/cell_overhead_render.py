"""The docs/benchmarks.md section of ``benchmarks/cell_overhead.py``'s result."""

from __future__ import annotations

from typing import Any


def render(result: dict[str, Any]) -> str:
    """A markdown section for one ``cell_overhead`` result."""
    r, t = result, result["targets"]
    median = r["round_trip_ms_median"]
    quick = " (**--quick run: not the full size**)" if r.get("quick") else ""
    calls = ", ".join(f"`{k}` {v:g}" for k, v in r["bound_calls_per_cell"].items()) or "none"
    bound = (
        f"{r['round_trips_per_bound_cell']:g} (start {r['round_trips_bound_start']:g}, "
        f"end {r['round_trips_bound_end']:g}; max {r['round_trips_per_bound_cell_max']:g})"
    )
    rows = [
        ("(a) no extension (median)", f"{median['a_no_extension']:.2f} ms", ""),
        (
            "(b) extension loaded, no session (median)",
            f"{median['b_extension_no_session']:.2f} ms",
            "",
        ),
        ("(c) `spark` bound to a managed session (median)", f"{median['c_bound']:.2f} ms", ""),
        (
            "(d) a session registered, `spark` unbound (median)",
            f"{median['d_session_unbound']:.2f} ms",
            "",
        ),
        ("(c) - (a)", f"{r['bound_minus_plain_ms']:.2f} ms", f"< {t['bound_minus_plain_ms']:g} ms"),
        (
            "(b) - (a)",
            f"{r['loaded_minus_plain_ms']:.2f} ms",
            f"about 0 (< {t['loaded_minus_plain_ms']:g} ms)",
        ),
        ("(d) - (a)", f"{r['unbound_minus_plain_ms']:.2f} ms", ""),
        ("(c) - (a), paired by block (median)", f"{r['bound_minus_plain_ms_paired']:.2f} ms", ""),
        ("(b) - (a), paired by block (median)", f"{r['loaded_minus_plain_ms_paired']:.2f} ms", ""),
        (
            "py4j round trips per bound cell (median)",
            bound,
            f"<= {t['round_trips_per_bound_cell']}",
        ),
        (
            "py4j round trips per unbound cell (median)",
            f"{r['round_trips_per_unbound_cell']:g}",
            f"{t['round_trips_per_unbound_cell']}",
        ),
    ]
    return f"""## Per-cell overhead (`benchmarks/cell_overhead.py`)

The round trip of an empty cell (`{r["cell"]}`: from the `execute_request` until both
its reply and its idle status arrived) in real kernels driven over jupyter_client
{r["rounds"]} times per configuration{quick}, in alternating blocks after a warm-up:
(a) a kernel without the extension, (b) the extension loaded with no session, (c) the
extension loaded with `spark` bound to a managed session on `local[2]`, (d) the same
kernel with the session registered but `spark` unbound. Then, in that kernel, py4j's
`send_command` ({r["py4j_gateway"]}'s connection) is wrapped to count the calls made from
the thread that runs the cells (the kernel's main thread; the board's producer thread is
not counted) over {r["count_cells"]} cells, split into the cell's start (the extension's
`pre_run_cell`) and its end (`post_run_cell`). Calls per bound cell: {calls}.

{_table(rows)}
Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| figure | measured | target |", "|---|---|---|"]
    lines += [f"| {figure} | {measured} | {target} |" for figure, measured, target in rows]
    return "\n".join(lines) + "\n"

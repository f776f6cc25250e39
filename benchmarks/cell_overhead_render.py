"""The docs/benchmarks.md section of ``benchmarks/cell_overhead.py``'s result."""

from __future__ import annotations

from typing import Any


def render(result: dict[str, Any]) -> str:
    """A markdown section for one ``cell_overhead`` result."""
    r, t = result, result["targets"]
    median = r["round_trip_ms_median"]
    quick = " (**--quick run: not the full size**)" if r.get("quick") else ""
    calls = ", ".join(f"`{k}` {v:g}" for k, v in r["bound_calls_per_cell"].items()) or "none"
    after = r.get("round_trips_bound_end_after_reply")
    after_reply = f", {after:g} of them after the reply" if after is not None else ""
    bound = (
        f"{r['round_trips_per_bound_cell']:g} (start {r['round_trips_bound_start']:g}, "
        f"end {r['round_trips_bound_end']:g}{after_reply}; "
        f"max {r['round_trips_per_bound_cell_max']:g})"
    )
    rows = [
        ("(a) no extension (median, all rounds)", f"{median['a_no_extension']:.2f} ms", ""),
        (
            "(b) extension loaded, no session (median, all rounds)",
            f"{median['b_extension_no_session']:.2f} ms",
            "",
        ),
        (
            "(c) `spark` bound to a managed session (median, all rounds)",
            f"{median['c_bound']:.2f} ms",
            "",
        ),
        (
            "(d) a session registered, `spark` unbound (median, all rounds)",
            f"{median['d_session_unbound']:.2f} ms",
            "",
        ),
        (
            "(c) - (a), median of the rounds",
            _over(r, "bound_minus_plain"),
            f"< {t['bound_minus_plain_ms']:g} ms",
        ),
        (
            "(b) - (a), median of the rounds",
            _over(r, "loaded_minus_plain"),
            f"about 0 (< {t['loaded_minus_plain_ms']:g} ms)",
        ),
        ("(d) - (a), median of the rounds", _over(r, "unbound_minus_plain"), ""),
        ("(c) - (d), one kernel: the binding's own cost", _over(r, "bound_minus_unbound"), ""),
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
its reply and its idle status arrived) in real kernels driven over jupyter_client{quick}:
(a) a kernel without the extension, (b) the extension loaded with no session, (c) the
extension loaded with `spark` bound to a managed session on `local[2]`, (d) the same
kernel with the session registered but `spark` unbound. {r["rounds"]} rounds, each on
fresh kernels (one kernel process runs the same cells up to about 1 ms slower or faster
than another on this VM), each {r.get("cells_per_round", 0)} cells per configuration in
alternating blocks after a warm-up; the differences are each round's, their median over
the rounds, with their range in brackets. Then, in the last round's kernel (c), py4j's
`send_command` ({r["py4j_gateway"]}'s connection) is wrapped to count the calls made from
the thread that runs the cells (the kernel's main thread; the board's producer thread is
not counted) over {r["count_cells"]} cells, split into the cell's start (the extension's
`pre_run_cell`) and its end (`post_run_cell`, and what the extension does once the
cell's reply is sent: it removes the cell's tags from the kernel's event loop, before
the next cell in any case). Calls per bound cell: {calls}.

{_table(rows)}
Targets met: **{"yes" if r["meets_targets"] else "NO"}** (measured {r["measured_at"]}).
"""


def _over(r: dict[str, Any], figure: str) -> str:
    if f"{figure}_ms_range" not in r:
        return f"{r[f'{figure}_ms']:.2f} ms"
    low, high = r[f"{figure}_ms_range"]
    return f"{r[f'{figure}_ms']:.2f} ms ({low:.2f} to {high:.2f})"


def _table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| figure | measured | target |", "|---|---|---|"]
    lines += [f"| {figure} | {measured} | {target} |" for figure, measured, target in rows]
    return "\n".join(lines) + "\n"

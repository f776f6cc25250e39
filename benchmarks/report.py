"""Render docs/benchmarks.md from the JSON results the benchmarks wrote."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

INTRO = """# Benchmarks

Targets are ratios against a baseline measured in the same run on the same machine, so
they hold on slower or faster hardware. Run them with `make bench` (it rewrites this
page from `benchmarks/results/*.json`). Figures below are from the last run that was
committed; the machine was a 2-core Linux VM (Python 3.11, OpenJDK 17, PySpark 4.3).
"""


def _cancel_latency(r: dict[str, object]) -> str:
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


RENDERERS = {"cancel_latency": _cancel_latency}


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

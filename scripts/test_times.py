"""Where a `make test` run spent its time: a table per make target and one per test module,
read from the run's results folder (build/test-results: `targets.txt`, written by the
Makefile, one ``<target> <seconds>`` line per timed target, ``test`` for the whole run
after set-up; each pytest target's JUnit XML and
the process census and the CPU seconds per module beside it, written by
tests/conftest.py).

    python scripts/test_times.py [RESULTS] [--update CONTRIBUTING.md] [--json FILE]
                                 [--durations tests/module_seconds.json]

prints the tables as Markdown; --update also puts them into the file, between the
``<!-- test-times -->`` and ``<!-- /test-times -->`` lines; --json records the targets'
times and process counts as the "after" of the suite-time benchmark
(benchmarks/results/test_suite.json, rendered on docs/benchmarks.md by
benchmarks/report.py; its "before" is kept).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

BEGIN, END = "<!-- test-times -->", "<!-- /test-times -->"
COUNTED = ("kernels", "JVMs", "Jupyter servers", "browsers")


def minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def read_targets(results: Path) -> list[tuple[str, float]]:
    path = results / "targets.txt"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        name, seconds = line.split()
        rows.append((name, float(seconds)))
    return rows


def read_modules(xml: Path) -> dict[str, tuple[int, float]]:
    """Module -> (tests, seconds: setup, call and teardown of its tests, from the XML)."""
    found: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for case in ET.parse(xml).iter("testcase"):
        module = case.get("classname", "?").split("::")[0]
        # classname is the dotted module path, plus a class if the test has one.
        parts = module.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        name = "/".join(parts) + ".py" if parts else module
        found[name][0] += 1
        found[name][1] += float(case.get("time", 0))
    return {m: (int(n), s) for m, (n, s) in found.items()}


#: How the table names the rows of targets.txt that are not plain make targets.
LABELS = {
    "setup-all": "set-up (venvs, Chromium, npm packages, class-data archives)",
    "test": "**make test, after set-up**",
}


def tables(results: Path) -> str:
    lines = ["| make target | wall (m:ss) | " + " | ".join(COUNTED) + " |"]
    lines.append("|---|---:|" + "---:|" * len(COUNTED))
    for name, seconds in read_targets(results):
        census = results / f"{name}.census.json"
        counts = json.loads(census.read_text()) if census.exists() else {}
        cells = [str(counts[k]) if k in counts else "" for k in COUNTED]
        label = LABELS.get(name, name)
        lines.append(f"| {label} | {minutes(seconds)} | " + " | ".join(cells) + " |")
    for xml in sorted(results.glob("*.xml")):
        modules = read_modules(xml)
        cpu_file = xml.with_suffix(".cpu.json")
        cpu = json.loads(cpu_file.read_text()) if cpu_file.exists() else {}
        lines += ["", f"`make {xml.stem}`, per module (setup, call and teardown of its tests;"]
        lines += ["CPU: seconds of every process it ran, tests/cpu_per_module.py):", ""]
        lines += ["| module | tests | seconds | CPU s |", "|---|---:|---:|---:|"]
        for module, (count, seconds) in sorted(modules.items(), key=lambda m: -m[1][1]):
            used = f"{cpu[module]:.0f}" if module in cpu else ""
            lines.append(f"| {module} | {count} | {seconds:.0f} | {used} |")
        if cpu:
            lines.append(
                f"| all | {sum(n for n, _ in modules.values())} | "
                f"{sum(s for _, s in modules.values()):.0f} | {sum(cpu.values()):.0f} |"
            )
        spans_file = xml.with_suffix(".spans.json")
        if spans_file.exists():
            lines += ["", wall_time_line(json.loads(spans_file.read_text()))]
    return "\n".join(lines) + "\n"


def wall_time_line(spans: dict) -> str:
    """Where a pytest run's wall time went besides its modules (from the spans
    tests/cpu_per_module.py writes): before the first module started (workers' start-up
    and collection), after the last ended, and how busy the workers were between."""
    start, end = spans["session"]
    modules = spans["modules"]
    if not modules:
        return f"Wall time {end - start:.0f} s, no module ran."
    first, last = min(m[2] for m in modules), max(m[3] for m in modules)
    busy: dict[str, float] = {}
    for worker, _, began, ended in modules:
        busy[worker] = busy.get(worker, 0.0) + ended - began
    share = sum(busy.values()) / (len(busy) * (last - first)) if last > first else 1.0
    ends = ", ".join(
        f"{w} {max(m[3] for m in modules if m[0] == w) - start:.0f} s" for w in sorted(busy)
    )
    return (
        f"Wall time {end - start:.0f} s: {first - start:.0f} s before the first module, "
        f"{end - last:.0f} s after the last; the {len(busy)} workers ran modules "
        f"{share:.0%} of the time between (each one's last ended at: {ends})."
    )


def update(path: Path, text: str) -> None:
    content = path.read_text()
    if BEGIN not in content or END not in content:
        sys.exit(f"{path}: no {BEGIN} ... {END} lines to put the tables between")
    head, rest = content.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")


def record(results: Path, path: Path) -> None:
    """Put this run's targets and census into the benchmark's JSON, keeping the rest."""
    data = json.loads(path.read_text()) if path.exists() else {"benchmark": "test_suite"}
    data["after"] = dict(read_targets(results))
    data["census"] = {
        census.name.removesuffix(".census.json"): json.loads(census.read_text())
        for census in sorted(results.glob("*.census.json"))
    }
    data["measured_at"] = time.strftime("%Y-%m-%d", time.localtime(results.stat().st_mtime))
    path.write_text(json.dumps(data, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", default="build/test-results", type=Path)
    parser.add_argument("--update", type=Path, help="a Markdown file to put the tables into")
    parser.add_argument("--json", type=Path, help="the suite-time benchmark's JSON to update")
    parser.add_argument(
        "--durations",
        type=Path,
        help="write each module's seconds in the main suite (make test's test-newest.xml, "
        "or make pytest's pytest.xml) to this JSON file "
        "(tests/module_seconds.json: the order in which the suite hands modules out)",
    )
    args = parser.parse_args()
    text = tables(args.results)
    print(text, end="")
    if args.update:
        update(args.update, text)
    if args.json:
        record(args.results, args.json)
    if args.durations:
        main_suite = next(
            xml
            for xml in (args.results / "test-newest.xml", args.results / "pytest.xml")
            if xml.exists()
        )
        modules = read_modules(main_suite)
        seconds = {m: round(s, 1) for m, (_, s) in sorted(modules.items())}
        args.durations.write_text(json.dumps(seconds, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""docs/benchmarks.md's section for benchmarks/shared_driver_soak.py, and its picture of
the shared driver's memory and threads over the soak (docs/images/shared-driver-soak.svg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PICTURE = Path(__file__).resolve().parent.parent / "docs" / "images" / "shared-driver-soak.svg"
#: What the picture draws, each in its own panel: (sample key, title, colour).
SERIES = (
    ("rss_mb", "resident memory of the driver JVM (MB)", "#4c78a8"),
    ("heap_mb", "heap in use (MB; before GC, as sampled)", "#f58518"),
    ("threads", "JVM threads", "#54a24b"),
)
LEFT, WIDTH, HEIGHT, GAP = 70, 700, 90, 40


def render(r: dict[str, Any]) -> str:
    write_picture(r)
    idle, after = r["idle_driver"], r["after_notebooks_left"]
    verdicts = r["verdicts"]
    cells = ", ".join(f"{n:,} {what}" for what, n in sorted(r["cells"].items()))
    medians = ", ".join(f"{what} {s:.2f} s" for what, s in sorted(r["cell_seconds_median"].items()))
    chaos = ", ".join(f"{n} {what}s" for what, n in sorted(r["chaos"].items())) or "none"
    rows = [
        ("cells run (all checked)", f"{cells}; medians: {medians}", "every one right"),
        (
            "failures",
            str(len(r["failures"])) + (f": {r['failures'][:3]}" if r["failures"] else ""),
            "0",
        ),
        (
            "kernels restarted / shut down",
            f"{chaos}; each (the restart or the new notebook, its sessions made again) took "
            f"{r['chaos_seconds_max']:.1f} s at most; the gone process's sessions released "
            "within 15 s each time (a failure says otherwise)",
            "released within 15 s",
        ),
        (
            "heap in use after a full GC: idle warm driver / after every notebook left",
            f"{idle['heap_mb']:.0f} / {after['heap_mb']:.0f} MB",
            "<= 1.25x + 32 MB",
        ),
        (
            "threads: idle / after (the kinds that grew most)",
            f"{idle['threads']:.0f} / {after['threads']:.0f} ({_grown(r)})",
            "no kind grown by more than 8 but Spark's bounded pools'",
        ),
        ("threads while the notebooks ran, every 10 minutes", _every_ten_minutes(r), "flat"),
        (
            "RSS: idle / with the notebooks / after",
            f"{idle['rss_mb']:.0f} / {r['with_notebooks']['rss_mb']:.0f} / "
            f"{after['rss_mb']:.0f} MB",
            "",
        ),
        (
            "Python worker daemons of the driver: idle / after every notebook left",
            f"{r['python_daemons']['idle']} / {r['python_daemons']['after_notebooks_left']}"
            + ("" if "python_daemons_released" in verdicts else " (not yet released then)"),
            "as idle, within 90 s",
        ),
        ("processes left once the Jupyter server stopped", str(len(r["left_after_stop"])), "0"),
    ]
    table = "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)
    met = (
        "yes"
        if all(verdicts.values())
        else "NO: " + ", ".join(k for k, v in verdicts.items() if not v)
    )
    return f"""## The shared driver's soak (`benchmarks/shared_driver_soak.py`)

{r["notebooks"]} notebooks of one real Jupyter server on one pre-warmed shared driver
(`local[2]`) for {r["minutes"]:g} minutes: two sessions each, each notebook's own
`lookup.csv` in both, a streaming query in two of them, and one cell after another
(about {r["pause_s"]:g} s apart) of a DataFrame job, a `%%spark_sql` cell with `-o`, a
UDF reading the file, or a long cell cancelled through the Jupyter server's relay; every
{r["chaos_every_s"]:g} s a kernel restarted or shut down (and a new notebook opened in its
place). Machine: {r["machine"]["cpus"]} cores, PySpark {r["machine"]["pyspark"]}.

| figure | measured | target |
|---|---|---|
{table}

All verdicts met: **{met}**. tests/test_shared_driver_kernel.py (its soak tests) runs it
for 3 minutes with 4 notebooks in CI. Spark (4.3) keys a Python worker daemon by the
session's artifact UUID and stops none when a Spark Connect session ends: a driver that
served many sessions would keep one idle `pyspark.daemon` process (and four JVM threads)
per session that ran Python. `jss.EndedSessionDaemons`, on every Connect server this
project starts, stops those of sessions the server no longer has (looking every 30 s).
The driver over the run (sampled every 5 s):

![The shared driver's RSS, heap and threads over the soak](images/shared-driver-soak.svg)
"""


def _grown(r: dict[str, Any]) -> str:
    if "threads_grown" not in r:  # a run before the kinds were recorded
        return (
            "kinds not recorded in this run, whose verdict was the total less four per "
            "daemon within 10 of idle"
        )
    return ", ".join(f"{name}: +{n}" for name, n in list(r["threads_grown"].items())[:5])


def _every_ten_minutes(r: dict[str, Any]) -> str:
    """The thread count at each 10-minute mark of the run (a leak per session climbs)."""
    marks, shown = [], set()
    for sample in r["samples"]:
        minute = int(sample["t"] // 600) * 10
        if minute not in shown:
            shown.add(minute)
            marks.append(f"{minute} min: {sample['threads']:.0f}")
    return ", ".join(marks)


def _panel(samples: list[dict[str, float]], key: str, title: str, colour: str, top: int) -> str:
    end = max(s["t"] for s in samples) or 1.0
    values = [s[key] for s in samples]
    high = max(values) * 1.1 or 1.0
    points = " ".join(
        f"{LEFT + s['t'] / end * WIDTH:.1f},{top + HEIGHT - s[key] / high * HEIGHT:.1f}"
        for s in samples
    )
    parts = [
        f'<text x="{LEFT}" y="{top - 8}" class="t">{title}</text>',
        f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>',
        f'<line x1="{LEFT}" y1="{top + HEIGHT}" x2="{LEFT + WIDTH}" y2="{top + HEIGHT}" '
        'stroke="#444"/>',
        f'<text x="8" y="{top + 10}" class="s">{high:.0f}</text>',
        f'<text x="8" y="{top + HEIGHT}" class="s">0</text>',
    ]
    step = max(1, round(end / 60 / 6)) * 60 if end > 360 else 30
    for t in range(0, int(end) + 1, step):
        x = LEFT + t / end * WIDTH
        label = f"{t // 60} min" if step >= 60 else f"{t} s"
        parts.append(f'<text x="{x:.1f}" y="{top + HEIGHT + 14}" class="s">{label}</text>')
    return "\n".join(parts)


def write_picture(r: dict[str, Any]) -> None:
    samples = r["samples"]
    if not samples:
        return
    height = len(SERIES) * (HEIGHT + GAP + 20) + 20
    panels = "\n".join(
        _panel(samples, key, title, colour, 30 + i * (HEIGHT + GAP + 20))
        for i, (key, title, colour) in enumerate(SERIES)
    )
    PICTURE.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="800" height="{height}" '
        'font-family="sans-serif">\n'
        "<style>.t { font-size: 13px; fill: #222 } .s { font-size: 11px; fill: #555 }</style>\n"
        f'<rect width="800" height="{height}" fill="white"/>\n{panels}\n</svg>\n'
    )

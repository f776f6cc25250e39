"""The demo notebooks (demo/, also what Binder opens) run top to bottom against a real
kernel and real Spark, and show what they say they show: each session's UDF reads its
own files, the cancelled group is reported cancelled while the other finishes, Connect
and classic sessions work side by side. And they leave nothing behind: no folder in the
temp folder once the kernel shut down, no spark-warehouse/ beside the notebook (Spark
makes one in the kernel's working folder when a stopped session's release first
touches the catalog)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

DEMO = Path(__file__).resolve().parent.parent / "demo"

#: Run after a demo's last cell: `stop` releases a session in the background once none
#: of its jobs ran for a second, and that release is what made spark-warehouse/.
_WAIT_FOR_RELEASES = """\
import time
from jupyter_spark_sessions import default_registry

releases = list(default_registry()._releases.values())
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not all(r.done for r in releases):
    time.sleep(0.1)
print("released:", all(r.done for r in releases))
"""


def run_demo(name: str, tmp_path: Path) -> dict[str, str]:
    """Execute demo/<name>.ipynb in an empty folder (the kernel's working folder, as
    beside the notebook), with a temp folder of its own; the text each cell printed or
    displayed, by cell id. Fails if the demo left anything in either."""
    notebook = nbformat.read(DEMO / f"{name}.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(_WAIT_FOR_RELEASES, id="wait-for-releases"))
    folder, temp = tmp_path / "notebook-folder", tmp_path / "temp"
    folder.mkdir()
    temp.mkdir()
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    # Raises CellExecutionError, with the cell and traceback, if one fails. The kernel
    # is shut down (and its atexit hooks have run) when it returns.
    client.execute(env={**os.environ, "TMPDIR": str(temp)})
    out = {cell.id: _text(cell) for cell in notebook.cells if cell.cell_type == "code"}
    assert out["wait-for-releases"] == "released: True\n", out["wait-for-releases"]
    assert sorted(p.name for p in folder.iterdir()) == [], "left beside the notebook"
    assert sorted(p.name for p in temp.glob("jss-*demo-*")) == [], "left in the temp folder"
    return out


def _text(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif "data" in output:
            parts.append(str(output["data"].get("text/plain", "")))
            if "application/vnd.jupyter.widget-view+json" in output["data"]:
                parts.append("<widget>")
    return "".join(parts)


def test_isolated_sessions_demo_reads_each_sessions_own_files(tmp_path: Path) -> None:
    out = run_demo("01-isolated-sessions", tmp_path)
    assert "EMEA EUR" in out["sales-reads"] and "APAC" not in out["sales-reads"]
    assert "APAC JPY" in out["marketing-reads"] and "EMEA" not in out["marketing-reads"]
    assert "region\nAPAC" in out["driver-reads"]
    # Each session's SQL cell reads its own `orders` view (issue 37).
    assert "EMEA" in out["sql-sales"] and "APAC" not in out["sql-sales"], out["sql-sales"]
    assert re.search(r"APAC\s+10\s+45000", out["sql-marketing"]), out["sql-marketing"]
    assert re.search(r"mine\s+adopted", out["adopt"]), out["adopt"]
    assert "still usable after stop (only unregistered): 3" in out["adopted-stop"]


def test_watch_and_cancel_demo_cancels_one_session_while_the_other_finishes(
    tmp_path: Path,
) -> None:
    out = run_demo("02-watch-and-cancel", tmp_path)
    assert "<widget>" in out["panel"]
    assert "Cancel requested" in out["cancel"], out["cancel"]
    # Many partitions: the board counts tasks out of 40 and 20, not 0/1 until the end.
    assert re.search(r"\ba:\d+\s+running\s+1 \(1 running\)\s+\d+/40\b", out["cancel"]), out[
        "cancel"
    ]
    assert re.search(r"\bb:\d+\s+running\s+1 \(1 running\)\s+\d+/20\b", out["cancel"]), out[
        "cancel"
    ]
    results = out["results"]
    assert "'b': 780" in results, results
    assert re.search(r"'a': 'error: .*CANCELLED", results), results
    states = dict(line.split() for line in out["states"].splitlines())
    a_groups = [state for group, state in states.items() if group.startswith("a:")]
    b_groups = [state for group, state in states.items() if group.startswith("b:")]
    assert a_groups == ["cancelled"] and b_groups == ["succeeded"], states


def test_connect_demo_runs_two_connect_sessions_beside_a_classic_one(tmp_path: Path) -> None:
    out = run_demo("03-spark-connect", tmp_path)
    listing = out["list"]
    assert re.search(r"north\s+created\s+connect\s+sc://localhost:\d+", listing), listing
    assert re.search(r"classic_one\s+created\s+classic", listing), listing
    assert "north reads: rows for north" in out["north-reads"]
    assert "south reads: rows for south" in out["south-reads"]
    assert "classic count: 1000" in out["classic"]
    assert "north still works: 5" in out["north-after-stop"]

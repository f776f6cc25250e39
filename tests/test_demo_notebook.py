"""The demo notebook that `make demo` opens runs top to bottom on an embedded local Spark,
and shows what it claims."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

DEMO = Path(__file__).parent.parent / "demo" / "sessions.ipynb"


def cell_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def test_demo_runs_and_shows_isolation(tmp_path: Path) -> None:
    notebook = nbformat.read(DEMO, as_version=4)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.kernel_manager_class = _this_python_kernel_manager()
    client.execute()
    texts = [cell_text(c) for c in notebook.cells if c.cell_type == "code"]
    everything = "\n".join(texts)
    assert "colours visible in model: False" in everything
    assert "shuffle partitions in model: 4" in everything
    assert "499999500000" in everything
    listing = next(t for t in texts if t.startswith("name"))
    assert "etl" in listing and "model" in listing
    assert "Stopped session 'etl'" in everything


def _this_python_kernel_manager() -> type:
    # Run the notebook on this interpreter (the one with the package installed),
    # whatever "python3" kernelspec the machine has.
    from jupyter_client.manager import KernelManager

    class ThisPythonKernelManager(KernelManager):
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            return [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]

    return ThisPythonKernelManager

"""`make demo` (the README's first command) serves the demos from copies and prints the
first demo's URL: running them leaves the clone's tracked notebooks as they are.

It starts a real JupyterLab (no kernel, no browser) from the Makefile's own recipe, with
the demo folder pointed at a temporary one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A server, though no kernel: with the kernel tests, not in `make check`.
pytestmark = [pytest.mark.kernel]


def test_make_demo_serves_copies_and_prints_the_first_demos_url(tmp_path: Path) -> None:
    copies = tmp_path / "demo"
    copies.mkdir()
    mine = copies / "01-isolated-sessions.ipynb"
    mine.write_text("{}")  # a copy the user edited: kept, not overwritten
    server = subprocess.Popen(
        [
            "make",
            "--no-print-directory",
            "-o",
            "setup",
            "demo",
            f"DEMO_DIR={copies}",
            "DEMO_ARGS=--no-browser --port 0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        deadline, seen = time.monotonic() + 90, []
        url = None
        while url is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            seen.append(line)
            url = re.search(r"http://127\.0\.0\.1:\d+/lab/tree/(\S+)\?token=\w+", line)
        assert url is not None, "".join(seen)
        assert url.group(1) == "01-isolated-sessions.ipynb"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    tracked = sorted(p.name for p in (ROOT / "demo").glob("*.ipynb"))
    assert sorted(p.name for p in copies.glob("*.ipynb")) == tracked
    assert mine.read_text() == "{}"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", "demo"], cwd=ROOT, capture_output=True, text=True
    )
    assert status.stdout == ""

"""Where a pytest run's wall time went (tests/cpu_per_module.py writes each module's
span, scripts/test_times.py sums them up): a light run of two modules, and the sum."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from test_times import wall_time_line  # noqa: E402


def test_a_run_writes_each_modules_span_beside_its_junit_xml(tmp_path: Path) -> None:
    xml = tmp_path / "light.xml"
    modules = ["tests/test_job_tags.py", "tests/test_magic_parsing.py"]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={xml}",
            *modules,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    spans = json.loads(xml.with_suffix(".spans.json").read_text())
    start, end = spans["session"]
    assert [m[1] for m in spans["modules"]] == modules
    for worker, _, began, ended in spans["modules"]:
        assert worker == "main" and start <= began <= ended <= end


def test_the_wall_time_line_names_the_start_the_end_and_how_busy_the_workers_were() -> None:
    spans = {
        "session": [100.0, 200.0],
        "modules": [
            ["gw0", "tests/a.py", 110.0, 190.0],
            ["gw1", "tests/b.py", 110.0, 150.0],
        ],
    }
    assert wall_time_line(spans) == (
        "Wall time 100 s: 10 s before the first module, 10 s after the last; the 2 workers "
        "ran modules 75% of the time between (each one's last ended at: gw0 90 s, gw1 50 s)."
    )

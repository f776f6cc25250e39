"""The run's census of started processes (tests/process_census.py, CONTRIBUTING.md's
table): each process looked at once, and again when an exec changes what it is, as
spark-class's bash becomes the JVM it starts."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from process_census import processes_started


def kinds_of(found: dict, pid: int) -> list:
    return [kind for (seen_pid, _), (_, kind) in found.items() if seen_pid == pid]


def test_a_process_that_execs_a_jvm_is_counted_as_one_when_it_does(tmp_path: Path) -> None:
    java = tmp_path / "java"  # what the census counts by name; this one only sleeps
    java.symlink_to(shutil.which("sleep") or "/bin/sleep")
    # bash's own `read -t` waits without a child process; then bash becomes "java".
    child = subprocess.Popen(["bash", "-c", f"read -t 1; exec {java} 5"], stdin=subprocess.PIPE)
    try:
        first = processes_started()
        assert kinds_of(first, child.pid) == [None]  # bash: not counted
        again = processes_started(first)
        assert again == first  # nothing looked at anew
        time.sleep(2)
        assert kinds_of(processes_started(first), child.pid) == ["JVMs"]
    finally:
        child.kill()
        child.wait()

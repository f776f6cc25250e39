"""Finding a Java that PySpark 4 can use, and the one-line error when there is none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from jupyter_spark_sessions.backends.java_runtime import find_java, parse_java_major, require_java
from jupyter_spark_sessions.errors import JavaNotFoundError


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "11.0.2" 2019-01-15', 11),
        ("garbage", None),
    ],
)
def test_parse_java_major(output: str, major: int | None) -> None:
    assert parse_java_major(output) == major


def test_missing_java_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFoundError) as info:
        require_java({"PATH": str(tmp_path)})
    message = str(info.value)
    assert "\n" not in message
    assert "Java 17 or 21" in message and "JAVA_HOME" in message


def test_old_java_is_refused_with_the_version_found(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    fake.chmod(0o755)
    with pytest.raises(JavaNotFoundError, match="Java 11; Spark needs Java 17"):
        require_java({"JAVA_HOME": str(tmp_path)})


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    assert find_java({"JAVA_HOME": str(tmp_path), "PATH": os.environ["PATH"]}) is None


@pytest.mark.spark  # runs the real `java -version`
def test_this_machine_has_a_supported_java() -> None:
    # The test suite needs a real JVM; the set-up installs one when missing.
    java = require_java()
    assert shutil.which("java") or os.environ.get("JAVA_HOME")
    assert os.access(java, os.X_OK)

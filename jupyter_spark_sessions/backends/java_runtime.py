"""Finding a Java runtime that PySpark 4 can start, before PySpark tries and fails obscurely."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

from ..errors import JavaNotFoundError

#: PySpark 4 runs on Java 17 and 21.
MINIMUM_JAVA = 17

_INSTALL_HINT = (
    "install one (for example `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
)


def find_java(environ: Mapping[str, str] | None = None) -> str | None:
    """Return the java executable PySpark would use (JAVA_HOME first, then PATH), or None."""
    env = os.environ if environ is None else environ
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java", path=env.get("PATH", ""))


def parse_java_major(version_output: str) -> int | None:
    """Read the major version from `java -version` output (``"17.0.15"`` -> 17, ``"1.8"`` -> 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        return int(match.group(2))
    return major


def require_java(environ: Mapping[str, str] | None = None) -> str:
    """Return the java executable, or raise JavaNotFoundError with what to do."""
    java = find_java(environ)
    if java is None:
        where = "JAVA_HOME" if (environ or os.environ).get("JAVA_HOME") else "PATH"
        raise JavaNotFoundError(
            f"Spark needs Java {MINIMUM_JAVA} or 21 and none was found on {where}: {_INSTALL_HINT}."
        )
    try:
        probe = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"Could not run {java} ({exc}): {_INSTALL_HINT}.") from None
    major = parse_java_major(probe.stderr + probe.stdout)
    if major is None or major < MINIMUM_JAVA:
        found = "an unknown version" if major is None else f"Java {major}"
        raise JavaNotFoundError(
            f"{java} is {found}; Spark needs Java {MINIMUM_JAVA} or 21: {_INSTALL_HINT}."
        )
    return java

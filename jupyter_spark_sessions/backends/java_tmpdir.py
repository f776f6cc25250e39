"""The temp folder (``java.io.tmpdir``) of the JVMs this project starts: the kernel's
driver and the local Spark Connect server.

Spark makes its artifact folder there (``artifacts-<uuid>``: its copy of every file
added to a session, mode 0644 for a Connect session's, in a 0755 folder), and other
temp files. In the machine's shared temp folder other users could list and read them,
and a killed kernel would leave them behind for good. In a folder inside the kernel's
private folder they are private and go with it: at shutdown, or when the next kernel
removes a killed kernel's folder. A ``java.io.tmpdir`` the user set wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: Where the user may have set the JVM's options for a driver started by spark-submit.
_USER_OPTIONS_ENV = ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")
_USER_OPTIONS_CONF = ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions")


def tmpdir_option(folder: Path, conf: Mapping[str, str]) -> str:
    """The JVM option that makes ``folder`` (made here, 0700) its temp folder, for
    ``SPARK_SUBMIT_OPTS``; "" when the user set ``java.io.tmpdir`` (``conf``: the
    settings the JVM is started with)."""
    named = [os.environ.get(key, "") for key in _USER_OPTIONS_ENV]
    named += [conf.get(key, "") for key in _USER_OPTIONS_CONF]
    if any("java.io.tmpdir" in options for options in named):
        return ""
    folder.mkdir(mode=0o700, exist_ok=True)  # Java does not make it
    # Spark's launcher splits SPARK_SUBMIT_OPTS like a shell: quote the path.
    quoted = str(folder).replace("\\", "\\\\").replace('"', '\\"')
    return f'"-Djava.io.tmpdir={quoted}"'


def with_option(options: str, option: str) -> str:
    """``options`` (a ``SPARK_SUBMIT_OPTS`` value) with ``option`` added."""
    return f"{options} {option}".strip()

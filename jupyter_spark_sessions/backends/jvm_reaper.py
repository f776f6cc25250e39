"""Reaping the JVMs this project starts (the driver's, a local Connect server's) the
moment they exit.

ipykernel's shutdown sends SIGTERM to every child left in the kernel's process group,
again and again for about 30 s until none is left, and it counts zombies. PySpark never
waits on its gateway JVM, so a JVM that has exited would linger as a zombie: a thread
per JVM reaps it as soon as it dies; without it a restart takes 30 s (or the server
kills the kernel after 5 s). ``kernel/shutdown.py`` tells the rest of the shutdown story.
"""

from __future__ import annotations

import subprocess
import threading


def reap_when_it_exits(process: subprocess.Popen[bytes] | None) -> None:
    """Wait for ``process`` on a daemon thread, so it is reaped as soon as it exits
    instead of lingering as a zombie that ipykernel's shutdown keeps waiting for."""
    if process is not None and process.returncode is None:
        threading.Thread(target=process.wait, name="jss-reap-jvm", daemon=True).start()

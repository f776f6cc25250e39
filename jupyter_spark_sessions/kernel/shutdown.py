"""Running cleanup when the kernel shuts down, while Spark's JVM is still alive.

ipykernel's shutdown handler first calls ``do_shutdown``, which sets the shell's
``exit_now`` trait, and then terminates every child process, the JVM included, before
Python's ``atexit`` hooks run. So an ``atexit`` hook would find py4j dead: the cleanup
observes ``exit_now`` instead (``exit``/``quit`` in a terminal IPython set it too).
``atexit`` stays as the fallback for plain Python. ``test_lifecycle_kernel.py`` breaks
if ipykernel changes this order.

ipykernel then sends SIGTERM to every child left in the kernel's process group, again
and again for about 30 s until none is left, and it counts zombies. So the cleanup ends
the JVM of the context it stopped and waits for it (``backends/driver.end_jvm``): killed
by those signals, the JVM's shutdown hooks would have their ``rm -rf`` children killed
too (``Failed to delete`` and a Java stack in the server's log). A JVM still running
after that (a context that is not this project's, or a slow exit) is killed as before,
and reaped the moment it dies (``backends/jvm_reaper.py``).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from typing import Any


def call_once_at_shutdown(shell: Any, cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` once, when the kernel (or IPython) is asked to exit."""
    done = threading.Event()

    def run_once() -> None:
        if not done.is_set():
            done.set()
            cleanup()

    def on_exit_now(change: dict[str, Any]) -> None:
        if change["new"]:
            run_once()

    if shell is not None and shell.has_trait("exit_now"):
        shell.observe(on_exit_now, names="exit_now")
    atexit.register(run_once)

"""Jupyter server extension: the shared Spark Connect server started with the Jupyter
server, before any notebook asks (``c.SparkSessionsConfig.shared_driver_prewarm =
True`` in jupyter_server_config.py), so the first notebook's first result comes in
about a second instead of a JVM's start.

It starts the server's keeper as a kernel would (``SharedDriverMembership.prewarm``,
under the rendezvous' lock: never a second server), with this Jupyter server as the
process that uses it: the keeper stops the server after the idle time with no session,
or when this Jupyter server exits, as for a notebook's. Again when a kernel starts
after it stopped. Never on the server's start path: a thread starts it and waits for
it, and writes to this server's log whether it is warm or why not (no Java, a master
that does not answer); the first notebook's `create` then says the same in one line.

The master, settings and idle time are the kernels' (``shared_driver_*`` in the default
IPython profile's ipython_config.py, which the kernels read), unless this server's own
config sets them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from tornado.ioloop import PeriodicCallback

from ..backends.local_connect_server import SERVER_LOG
from ..config import SparkSessionsConfig
from ..shared_driver.membership import SharedDriverMembership
from ..shared_driver.rendezvous import FAILED, RUNNING, Process

log = logging.getLogger("jupyter_spark_sessions.prewarm")

#: Milliseconds between two looks at this server's kernels (a new one re-warms).
KERNEL_LOOK_MS = 3000


def install(server_app: Any) -> Prewarm | None:
    """Pre-warm when the setting asks for it; the pre-warmer, or None."""
    settings = server_settings(server_app)
    if not settings.shared_driver_prewarm:
        return None
    prewarm = Prewarm(
        settings, lambda: set(server_app.kernel_manager.list_kernel_ids()), server_app.log
    )
    prewarm.warm_in_background("the Jupyter server started")
    PeriodicCallback(prewarm.look_at_kernels, KERNEL_LOOK_MS).start()
    return prewarm


def server_settings(server_app: Any) -> SparkSessionsConfig:
    """The kernels' settings (their IPython profile) under this server's own."""
    from traitlets.config import Config

    merged = Config()
    merged.merge(_kernels_config())
    merged.merge(server_app.config)
    return SparkSessionsConfig(config=merged)


def _kernels_config() -> Any:
    from IPython.paths import get_ipython_dir
    from traitlets.config import Config
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    profile = os.path.join(get_ipython_dir(), "profile_default")
    try:
        return PyFileConfigLoader("ipython_config.py", path=profile).load_config()
    except ConfigFileNotFound:
        return Config()
    except Exception as exc:  # the kernels will say what is wrong with it
        log.warning("Could not read the kernels' settings in %s: %s", profile, exc)
        return Config()


class Prewarm:
    """Keeps the shared server warm for this Jupyter server's notebooks."""

    def __init__(
        self, settings: SparkSessionsConfig, kernels: Any, server_log: logging.Logger = log
    ) -> None:
        self.settings = settings
        self.log = server_log  # the Jupyter server's: its log says what became of it
        self._kernels = kernels
        self._seen: set[str] = set()
        self._busy = threading.Lock()
        self.server = Process.of(os.getpid())

    def look_at_kernels(self) -> None:
        """A kernel started since the last look: warm the server if it stopped."""
        kernels = self._kernels()
        if kernels - self._seen:
            self.warm_in_background("a kernel started")
        self._seen = kernels

    def warm_in_background(self, why: str) -> None:
        if self._busy.acquire(blocking=False):
            threading.Thread(target=self._warm, args=(why,), daemon=True).start()

    def _warm(self, why: str) -> None:
        try:
            self.warm(why)
        except Exception as exc:  # never the Jupyter server's problem; the log says why
            self.log.error(
                "The shared Spark driver was not pre-warmed: %s", str(exc).splitlines()[0]
            )
        finally:
            self._busy.release()

    def warm(self, why: str) -> str:
        """Start the server unless it runs; wait for it; the state it reached."""
        membership = SharedDriverMembership(self.settings)
        record = membership.prewarm(self.server)
        if record is None:
            return RUNNING  # it runs or starts already
        began = time.monotonic()
        self.log.info("Pre-warming the shared Spark driver (%s, %s) ...", record.master, why)
        deadline = began + self.settings.connect_start_timeout + 30
        rendezvous = membership.rendezvous
        while time.monotonic() < deadline:
            with rendezvous.locked():
                now = rendezvous.read()
            if now is None or now.id != record.id:
                break
            if now.state == RUNNING:
                self.log.info("The shared Spark driver is warm (%.0f s).", time.monotonic() - began)
                return RUNNING
            if now.state == FAILED or not now.keeper.alive():
                folder = rendezvous.server_folder(record)
                self.log.error(
                    "The shared Spark driver did not start: %s (log: %s).",
                    now.error or "its keeper exited",
                    folder / SERVER_LOG,
                )
                return FAILED
            time.sleep(0.2)
        self.log.error("The shared Spark driver was not warm in time.")
        return FAILED

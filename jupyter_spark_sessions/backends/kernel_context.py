"""The kernel's context: the one SparkContext of a kernel, on which every classic session
lives (not the shared driver, a Spark Connect server a user's notebooks share).

Found (a context the user started) or started (on the configured master) for the first
classic session; started again on the same master and settings after a stop or a lost
driver; stopped at shutdown only if this project started it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import SparkSessionsConfig
from ..errors import ConfError, ContextStoppedError, MasterMismatchError
from . import classic, context_start, driver, scheduler_pools
from .java_runtime import require_java
from .jvm_reaper import reap_when_it_exits

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession


#: How long kernel shutdown waits for the JVM of the context it stopped to exit (it takes
#: about 0.4 s: Spark's shutdown hooks delete its scratch folders; a whole shutdown took
#: 1.5-1.7 s here). Jupyter's kernel manager sends SIGTERM to a kernel still running
#: 2.5 s after a shutdown request: the JVM, its stdin closed, then still exits by
#: itself, and the kernel's folder goes at the next kernel's start.
JVM_EXIT_SECONDS = 2.0


@dataclass(frozen=True)
class ContextRecipe:
    """How the kernel's SparkContext was started (or found): a new one after a stop or
    a lost driver repeats it unless the user names another master."""

    master: str
    conf: Mapping[str, str]


class KernelContext:
    """The one SparkContext of the kernel and what is known of how it was made.

    ``on_replaced`` is called when a new context replaces one sessions used (its job
    ids start again from 0)."""

    def __init__(self, config: SparkSessionsConfig, on_replaced: Callable[[], None]) -> None:
        self.config = config
        self._on_replaced = on_replaced
        self._lock = threading.Lock()
        self._owned: SparkContext | None = None
        self._recipe: ContextRecipe | None = None  # of the last context sessions used
        #: How many times a new context replaced one sessions used.
        self.replaced = 0

    @property
    def owned(self) -> bool:
        """True when this project started the running SparkContext."""
        sc = self._owned
        return sc is not None and not driver.context_is_stopped(sc)

    def create_session(
        self,
        name: str,
        settings: Mapping[str, str],
        master: str | None = None,
        share: scheduler_pools.PoolShare | None = None,
    ) -> classic.ClassicBackend:
        """A new isolated session ``name`` on the running context, started on ``master``
        (default: the configured one, or the previous one's) when none runs. On a
        context this project started in FAIR mode (its default), the session runs its
        jobs in a scheduler pool of its own, named after it, with ``share``, unless
        ``settings`` name a pool; ConfError when ``share`` cannot apply."""
        root = self._root_session(master)
        sc = root.sparkContext
        share = share or scheduler_pools.DEFAULT_SHARE
        pool = self._own_pool(name, settings, sc, share)
        if pool is not None:
            settings = {**settings, scheduler_pools.POOL: pool}
        backend = classic.create(root, name, settings)  # refuses bad settings first
        if pool is not None:
            scheduler_pools.ensure_pool(sc, pool, share.weight, share.min_share)
        return backend

    def change_share(
        self,
        backend: classic.ClassicBackend,
        settings: Mapping[str, str],
        share: scheduler_pools.PoolShare,
    ) -> None:
        """Run the new jobs of a session made with ``settings`` with ``share`` (its
        running jobs keep theirs: Spark fixes a job's pool when it is submitted);
        ConfError when it cannot apply."""
        sc = backend.sc
        pool = self._own_pool(backend.name, settings, sc, share)
        if pool is None:  # only for the default share, which _own_pool does not refuse
            raise ConfError(
                "That session has no pool of its own: it runs in your spark.scheduler.pool, "
                "or the SparkContext schedules FIFO or is not this project's."
            )
        scheduler_pools.ensure_pool(sc, pool, share.weight, share.min_share)
        backend.set_pool(pool)

    def _own_pool(
        self,
        name: str,
        settings: Mapping[str, str],
        sc: SparkContext,
        share: scheduler_pools.PoolShare,
    ) -> str | None:
        """The pool session ``name`` gets on ``sc``, or None when it keeps the user's
        (their ``spark.scheduler.pool``) or the context schedules FIFO or is the user's;
        ConfError when ``share`` was asked for and cannot apply there."""
        asked = share != scheduler_pools.DEFAULT_SHARE
        if scheduler_pools.POOL in settings:
            if asked:
                raise ConfError(
                    "--weight and --min-share shape the session's own pool; --conf "
                    "spark.scheduler.pool puts it in yours, whose shares are your "
                    "allocation file's."
                )
            return None
        if not self.owned or scheduler_pools.mode(sc) != "FAIR":
            if asked:
                why = (
                    "this SparkContext schedules FIFO (spark.scheduler.mode)"
                    if self.owned
                    else "the running SparkContext was not started by jupyter_spark_sessions, "
                    "which keeps its scheduling as it is"
                )
                raise ConfError(f"--weight and --min-share need FAIR scheduling: {why}.")
            return None
        return scheduler_pools.pool_name(name, share)

    def _root_session(self, master: str | None) -> SparkSession:
        with self._lock:
            sc = driver.active_context()
            state = driver.driver_state(sc) if sc is not None else None
            if sc is not None and state == "running":
                if master is not None and master != sc.master:
                    raise MasterMismatchError(
                        f"A SparkContext already runs on {sc.master}; --master {master} can "
                        "only be used when none runs (or stop that context first)."
                    )
                if self._recipe is None or self._owned is not sc:
                    self._recipe = ContextRecipe(str(sc.master), context_start.context_settings(sc))
                return context_start.root_session(sc)
            if sc is not None:  # stopped in the JVM, or its driver lost
                driver.forget_lost_driver(sc)
            return self._start(master)

    def _start(self, master: str | None) -> SparkSession:
        # Under _lock. After a stop or a lost driver, the previous master and settings,
        # unless the user names a master.
        recipe = self._recipe
        if master is None and recipe is not None:
            master, conf = recipe.master, {**recipe.conf}
        else:
            master, conf = master or self.config.default_master, dict(self.config.context_conf)
        require_java()
        root = context_start.start_context(
            master,
            self.config.app_name,
            conf,
            scratch_dir=str(self.config.kernel_root().scratch_dir()),
            java_tmp_dir=str(self.config.kernel_root().java_tmp_dir()),
        )
        if self._recipe is not None:  # the board's job ids are the old context's
            self.replaced += 1
            self._on_replaced()
        self._owned = root.sparkContext
        self._recipe = ContextRecipe(master, conf)
        return root

    def restart(self, sessions_broken: bool) -> tuple[str, bool]:
        """Make sure a usable context runs for sessions to be made again on it: start a
        new one (the previous master and settings) unless one runs. ``sessions_broken``:
        some session on it cannot work (without any, a running context means there is
        nothing to restart: ContextStoppedError). Returns (master, whether it started
        one)."""
        with self._lock:
            sc = driver.active_context()
            running = sc if sc is not None and driver.driver_state(sc) == "running" else None
            if running is not None and not sessions_broken:
                raise ContextStoppedError(
                    f"The Spark driver runs on {running.master} and every session is "
                    "usable: nothing to restart."
                )
            if self._recipe is None:
                raise ContextStoppedError(
                    "No Spark driver was started in this kernel yet: `%spark_session create "
                    "NAME` starts one."
                )
            if running is not None:
                return str(running.master), False
            if sc is not None:
                driver.forget_lost_driver(sc)
            return str(self._start(None).sparkContext.master), True

    def stop_if_owned(self, jvm_exit_timeout: float = JVM_EXIT_SECONDS) -> None:
        """Kernel shutdown: stop the context if this project started it, then end its
        JVM and wait for it (``driver.end_jvm``, at most ``jvm_exit_timeout`` s) unless
        another context runs there; let the JVM be reaped when it exits (the kernel now
        terminates its children)."""
        owned, self._owned = self._owned, None
        if owned is not None:
            if not driver.context_is_stopped(owned):
                owned.stop()
            driver.end_jvm(jvm_exit_timeout)
        reap_when_it_exits(driver.gateway_process())

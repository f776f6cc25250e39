"""The wiring of one kernel's jupyter_spark_sessions, in one place.

``SparkSessionsApp`` builds the parts and hands each what it needs: the thread tagger,
the job board and its producer thread (the poller), the kernel's shared SparkContext,
the Spark Connect endpoints (this user's shared Connect server among them), and the
registry of named sessions, which uses all of them. ``load_ipython_extension``
(``__init__.py``) hands the cells, the Interrupt, the magics and the kernel's channels
the parts they use from here, never through the registry. ``default_app()`` is the
process-wide one the magics use.
"""

from __future__ import annotations

import threading

from .backends.base import SessionBackend
from .backends.kernel_context import KernelContext
from .backends.local_connect_server import ConnectEndpoints
from .board.job_board import JobBoard
from .board.poller import BoardPoller
from .board.snapshot import SessionView
from .config import SparkSessionsConfig
from .sessions.registry import SessionRegistry
from .sessions.thread_tagger import ThreadJobTagger
from .shared_driver.membership import SharedDriverMembership


class SparkSessionsApp:
    """Every part of one kernel's extension, built once and wired together."""

    def __init__(self, config: SparkSessionsConfig | None = None) -> None:
        self.config = config or SparkSessionsConfig()
        #: The job tags each thread carries for the session it runs (cells, threads).
        self.tagger = ThreadJobTagger()
        #: Job groups of the sessions, kept current by ``poller`` (started by the
        #: first session); it learns of sessions from the registry (``names`` below).
        self.board = JobBoard(self, self.config)
        self.poller = BoardPoller(self.board)
        #: The kernel's SparkContext, which every classic session lives on.
        self.context = KernelContext(self.config, on_replaced=self.board.context_replaced)
        #: Where ``--remote`` sessions go, and the local Connect server if one was started.
        self.endpoints = ConnectEndpoints(self.config, shared=SharedDriverMembership(self.config))
        self.registry = SessionRegistry(
            self.config,
            board=self.board,
            poller=self.poller,
            context=self.context,
            endpoints=self.endpoints,
            tagger=self.tagger,
        )

    # The board's view of the sessions (``job_board.SessionSource``): the registry's.
    def names(self) -> list[str]:
        return self.registry.names()

    def backend(self, name: str) -> SessionBackend:
        return self.registry.backend(name)

    def describe(self, name: str, running_jobs: int | None = None) -> SessionView:
        return self.registry.describe(name, running_jobs)


_default: SparkSessionsApp | None = None
_default_lock = threading.Lock()


def default_app(config: SparkSessionsConfig | None = None) -> SparkSessionsApp:
    """The process-wide app the magics use.

    ``config`` is used only by the call that creates it (the extension passes the
    shell's configuration when it loads)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SparkSessionsApp(config)
        return _default


def default_registry(config: SparkSessionsConfig | None = None) -> SessionRegistry:
    """The process-wide registry the magics use; the Python API's entry point."""
    return default_app(config).registry

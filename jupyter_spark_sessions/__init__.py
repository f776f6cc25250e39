"""jupyter_spark_sessions: isolated Spark sessions for notebooks.

Load in IPython with ``%load_ext jupyter_spark_sessions``; from plain Python use
``default_registry()`` (or the registry of your own ``SparkSessionsApp``).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import SparkSessionsApp, default_app, default_registry
    from .backends.scheduler_pools import PoolShare
    from .board.job_board import JobBoard
    from .board.snapshot import BoardSnapshot, GroupView, SessionView
    from .config import SparkSessionsConfig
    from .errors import (
        ArtifactError,
        ConfError,
        ConnectError,
        ContextStoppedError,
        GatewayRelayError,
        JavaNotFoundError,
        JobsCancelled,
        MasterMismatchError,
        NotASparkSessionError,
        PackagesError,
        ProtocolError,
        SessionLostError,
        SessionNameError,
        SessionRootError,
        SparkSessionsError,
        SqlInputError,
        SqlStatementError,
        UnknownGroupError,
        UnknownQueryError,
        UnknownSessionError,
        UnsupportedKernelError,
    )
    from .files.artifacts import AddResult, Artifact
    from .job_tags import group_id, group_tag, parse_tag, session_tag
    from .sessions.registry import ManagedSession, SessionInfo, SessionRegistry
    from .sessions.release import Release

#: Where each public name lives. Imported on first use (PEP 562): a process that runs one
#: module of the package (the Python workers' daemon, backends/spark_daemon.py; the
#: shared driver's keeper) imports that module, not all of the package (0.14 CPU-s at
#: each start of a daemon, which every new session's first Python UDF waits for).
_LAZY = {
    "SparkSessionsApp": ".app",
    "default_app": ".app",
    "default_registry": ".app",
    "PoolShare": ".backends.scheduler_pools",
    "JobBoard": ".board.job_board",
    "BoardSnapshot": ".board.snapshot",
    "GroupView": ".board.snapshot",
    "SessionView": ".board.snapshot",
    "SparkSessionsConfig": ".config",
    "ArtifactError": ".errors",
    "ConfError": ".errors",
    "ConnectError": ".errors",
    "ContextStoppedError": ".errors",
    "GatewayRelayError": ".errors",
    "JavaNotFoundError": ".errors",
    "JobsCancelled": ".errors",
    "MasterMismatchError": ".errors",
    "NotASparkSessionError": ".errors",
    "PackagesError": ".errors",
    "ProtocolError": ".errors",
    "SessionLostError": ".errors",
    "SessionNameError": ".errors",
    "SessionRootError": ".errors",
    "SparkSessionsError": ".errors",
    "SqlInputError": ".errors",
    "SqlStatementError": ".errors",
    "UnknownGroupError": ".errors",
    "UnknownQueryError": ".errors",
    "UnknownSessionError": ".errors",
    "UnsupportedKernelError": ".errors",
    "AddResult": ".files.artifacts",
    "Artifact": ".files.artifacts",
    "group_id": ".job_tags",
    "group_tag": ".job_tags",
    "parse_tag": ".job_tags",
    "session_tag": ".job_tags",
    "ManagedSession": ".sessions.registry",
    "SessionInfo": ".sessions.registry",
    "SessionRegistry": ".sessions.registry",
    "Release": ".sessions.release",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once: the next lookup finds it here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "Artifact",
    "ArtifactError",
    "BoardSnapshot",
    "ConfError",
    "ConnectError",
    "ContextStoppedError",
    "GatewayRelayError",
    "GroupView",
    "JavaNotFoundError",
    "JobBoard",
    "JobsCancelled",
    "ManagedSession",
    "MasterMismatchError",
    "NotASparkSessionError",
    "PackagesError",
    "PoolShare",
    "ProtocolError",
    "Release",
    "SessionInfo",
    "SessionLostError",
    "SessionNameError",
    "SessionRegistry",
    "SessionRootError",
    "SessionView",
    "SparkSessionsApp",
    "SparkSessionsConfig",
    "SparkSessionsError",
    "SqlInputError",
    "SqlStatementError",
    "UnknownGroupError",
    "UnknownQueryError",
    "UnknownSessionError",
    "UnsupportedKernelError",
    "__version__",
    "default_app",
    "default_registry",
    "group_id",
    "group_tag",
    "load_ipython_extension",
    "parse_tag",
    "session_tag",
    "unload_ipython_extension",
]

_loaded: dict[int, Any] = {}


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-spark-sessions"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_spark_sessions"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """The REST relay to kernels' control channels (see ``server/rest_relay.py``), the
    shared Connect server's state (``server/shared_driver_route.py``), the removal
    of what ended kernels left (``server/leftovers.py``) and the shared driver's warm
    start (``server/prewarm.py``, opt-in)."""
    from .server import leftovers, prewarm, shared_driver_route
    from .server.rest_relay import load_handlers

    load_handlers(server_app)
    shared_driver_route.load_handlers(server_app)
    leftovers.install(server_app)
    prewarm.install(server_app)


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext jupyter_spark_sessions``: register the magics and cell job tagging.
    PySpark is imported only when a session is first created."""
    if id(ip) in _loaded:
        return
    # gRPC's fork handlers run in the child of every fork with a pre-exec hook (how
    # PySpark launches its JVM): while a Spark Connect call is in flight on another
    # thread they crash that child ("Check failed: next_worker->state == KICKED"), and
    # a classic `create` after a Connect session fails with JAVA_GATEWAY_EXITED. The
    # kernel never uses gRPC across a fork, so the handlers are off (read at import).
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    from .app import default_app
    from .cells.error_lines import CancelledCellErrors
    from .cells.interrupt import CellInterrupts
    from .cells.lifecycle import CellLifecycle
    from .cells.progress import CellProgressViews
    from .cells.query_views import CellQueryViews
    from .cells.tagging import CellJobTagging
    from .kernel.shutdown import call_once_at_shutdown
    from .magics import sql_completer
    from .magics.session_magics import SparkSessionMagics
    from .magics.sql_magic import SparkSqlMagics

    app = default_app(_settings(ip))
    registry = app.registry
    # Folders that killed kernels left behind (their shutdown never ran) go now.
    registry.config.remove_dead_kernel_folders()
    tagging = CellJobTagging(ip, app)
    interrupts = CellInterrupts(ip, app, CancelledCellErrors(ip, app))
    kernel = getattr(ip, "kernel", None)
    if kernel is not None:  # in a Jupyter kernel (not a terminal IPython)
        from IPython.core.error import UsageError

        from .errors import UnsupportedKernelError
        from .kernel.channels import KernelChannels
        from .kernel.request_handler import RequestHandler

        try:
            KernelChannels(kernel, RequestHandler(registry, app.board)).install()
        except UnsupportedKernelError as exc:  # before anything is registered
            raise UsageError(f"jupyter_spark_sessions cannot load: {exc}") from None
    ip.register_magics(SparkSessionMagics(ip, app, tagging))
    ip.register_magics(SparkSqlMagics(ip, app, tagging))
    sql_completer.install(ip, registry)
    progress = CellProgressViews(ip, app, tagging)
    query_views = CellQueryViews(ip, app)  # a query's view outlives its cell

    def follow_board() -> None:
        progress.follow_board()
        query_views.follow_board()

    def leave_board() -> None:
        progress.leave_board()
        query_views.leave_board()

    lifecycle = CellLifecycle(
        ip,
        (tagging, interrupts, progress),  # the order cells/lifecycle.py explains
        on_register=follow_board,
        on_unregister=leave_board,
    )
    lifecycle.register()
    # Release sessions and stop a context this project started when the kernel exits.
    call_once_at_shutdown(ip, registry.shutdown)
    _loaded[id(ip)] = lifecycle
    if kernel is not None:  # last: frontends that see it send requests at once
        from .kernel import marker

        marker.advertise(kernel)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext``: stop tagging cells. Sessions stay registered and usable."""
    lifecycle = _loaded.pop(id(ip), None)
    if lifecycle is not None:
        from .magics import sql_completer

        lifecycle.unregister()
        sql_completer.uninstall(ip)
        kernel = getattr(ip, "kernel", None)
        if kernel is not None:
            from .kernel import marker

            marker.withdraw(kernel)


def _settings(ip: Any) -> SparkSessionsConfig:
    """The kernel's settings; one that does not fit its trait (not a number, out of range)
    refuses the load in one line, and nothing of the extension is set up."""
    from IPython.core.error import UsageError
    from traitlets import TraitError

    from .config import SparkSessionsConfig

    try:
        return SparkSessionsConfig(parent=ip)
    except TraitError as bad:
        raise UsageError(f"jupyter_spark_sessions not loaded: a setting is wrong: {bad}") from None

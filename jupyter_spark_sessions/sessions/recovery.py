"""Making sessions again after Spark lost them: ``restart`` (the created classic
sessions, on a new SparkContext), ``reconnect`` (one created Connect session, on its
server), and the ``RestartReport`` of a restart.

``registry.SessionRegistry.restart`` and ``.reconnect`` hand their entries here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import ArtifactError, ConnectError
from .gone_objects import mark_gone
from .release import release_quietly

if TYPE_CHECKING:
    from ..backends.base import SessionBackend
    from ..backends.kernel_context import KernelContext
    from ..backends.local_connect_server import ConnectEndpoints
    from ..backends.scheduler_pools import PoolShare
    from ..board.job_board import JobBoard
    from ..files.artifacts import SessionArtifacts


@dataclass(frozen=True)
class RestartReport:
    """What ``restart`` did."""

    master: str
    recreated: tuple[tuple[str, int], ...]  # (session, files added again)
    dropped: tuple[str, ...]  # adopted sessions: only their owner can make them again
    started: bool  # False when the context ran and only sessions needed making again
    refused: tuple[str, ...] = ()  # files Spark did not take again, one line each
    #: Streaming queries that ran on the old context ("'rates' of a"): gone with it.
    lost_queries: tuple[str, ...] = ()


class Recoverable(Protocol):
    """What making a session again needs of a registry entry (``registry.ManagedSession``
    is one): how it was made, and its backend, which is replaced."""

    backend: SessionBackend

    @property
    def name(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def settings(self) -> Mapping[str, str]: ...
    @property
    def remote(self) -> str | None: ...
    @property
    def share(self) -> PoolShare | None: ...
    @property
    def artifacts(self) -> SessionArtifacts: ...
    @property
    def session(self) -> Any: ...


Managed = TypeVar("Managed", bound=Recoverable)


def restart(
    on_context: list[Managed],
    context: KernelContext,
    board: JobBoard,
    unregister: Callable[[Managed], None],
) -> RestartReport:
    """``SessionRegistry.restart`` for its sessions on the shared context
    (``on_context``); ``unregister`` drops an adopted one from the registry."""
    broken = [m for m in on_context if m.backend.problem()]
    master, started = context.restart(sessions_broken=bool(broken))
    if started:  # all of the old context's (``problem`` may not know it died yet)
        broken = on_context
    recreated, dropped, refused = [], [], []
    lost_queries = board.queries.lose(
        [m.name for m in broken], "lost with its Spark driver (`%spark_session restart`)"
    )
    for managed in broken:
        mark_gone(
            managed.session,
            f"session '{managed.name}' as it was before "
            "`%spark_session restart` (its SparkContext is gone)",
        )
        if managed.origin == "adopted":
            unregister(managed)
            dropped.append(managed.name)
            continue
        backend = context.create_session(managed.name, managed.settings, share=managed.share)
        backend.watch(board.operation_sink(managed.name))
        managed.backend = backend
        try:
            managed.artifacts.register_again(backend.add_artifact)
        except ArtifactError as exc:  # the session is back; say which file is not
            refused.append(str(exc))
        recreated.append((managed.name, len(managed.artifacts.list())))
    board.wake_now()
    return RestartReport(
        master, tuple(recreated), tuple(dropped), started, tuple(refused), tuple(lost_queries)
    )


def reconnect(managed: Recoverable, endpoints: ConnectEndpoints, board: JobBoard) -> None:
    """``SessionRegistry.reconnect`` for its entry ``managed``: a new backend replaces
    its backend."""
    name = managed.name
    if managed.backend.on_kernel_context:
        raise ConnectError(
            f"'{name}' is a classic session: `%spark_session restart` makes classic "
            "sessions again after their driver was lost."
        )
    if managed.origin == "adopted":
        raise ConnectError(
            f"'{name}' was adopted: make the session again yourself, then "
            f"`%spark_session stop {name}` and `%spark_session adopt {name} VARIABLE`."
        )
    old = managed.backend
    # --remote local: our server, or a new one if it died (on another port).
    assert managed.remote is not None  # a created Connect session
    backend = endpoints.create_session(managed.remote, name, managed.settings)
    try:
        managed.artifacts.register_again(backend.add_artifact)
    except BaseException:
        backend.release(quick=True)
        raise
    old.stopping()
    mark_gone(old.session, f"session '{name}' as it was before `%spark_session reconnect`")
    backend.watch(board.operation_sink(name))
    managed.backend = backend
    # The old server session (if the server still knows it) goes in the background.
    threading.Thread(target=release_quietly, args=(old,), daemon=True).start()
    board.wake_now()

"""Where a Spark Connect server listens: ``sc://host:port`` URLs checked and
redacted (a token never reaches output or logs), and whether anything answers there.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import ConnectError

if TYPE_CHECKING:
    pass


#: ``--remote local``: a server this project starts (and stops at kernel shutdown).
LOCAL = "local"
#: ``--remote shared``: the server shared by this user's notebooks (``shared_driver``).
SHARED = "shared"


@dataclass(frozen=True)
class Endpoint:
    """Where a Connect server listens; ``url`` may carry a token, ``display`` never does."""

    url: str
    host: str
    port: int
    #: The server's Spark UI, when the server is this kernel's (``--remote local``); a
    #: remote server's UI runs on its machine and Connect does not say where.
    ui_url: str = ""
    #: That UI wants the secret only this kernel's Jupyter server has (``UiSecretFilter``).
    ui_protected: bool = False
    #: That secret, for this kernel's own reads of the UI's REST API (the stages of its
    #: sessions' operations: ``server_stages``); never shown.
    ui_secret: str = field(default="", repr=False)
    #: Its workers run on this machine (``--remote local``'s; the shared server's on a
    #: local master or a standalone one here).
    local: bool = False
    #: The server of this user's notebooks (``--remote shared``).
    shared: bool = False
    #: Its tasks run in its own JVM (``local``, ``local[...]``): a task's
    #: OutOfMemoryError is the server's, and Spark stops its SparkContext for it.
    tasks_in_server: bool = False
    #: Where the shared server's keeper says how the server ended, if it did
    #: (``shared_driver.rendezvous.END_NOTE``).
    end_note_path: str = ""
    #: The shared server's log (``local_connect_server.SERVER_LOG``).
    log_path: str = ""

    def end_note(self) -> str:
        """How the server ended (``ran out of memory (...)``), when its keeper said so;
        else, while a server whose task ran out of memory still winds down (its JVM
        exits tens of seconds after its SparkContext stopped), what its log says."""
        if self.end_note_path:
            try:
                with open(self.end_note_path, errors="replace") as note:
                    return note.read(500).strip()
            except OSError:
                pass
        memory = out_of_memory_in(self.log_path) if self.log_path else ""
        return f"ran out of memory ({memory})" if memory else ""

    @property
    def display(self) -> str:
        return f"sc://{self.host}:{self.port}"


#: How much of a server's log's end ``out_of_memory_in`` reads: a dying JVM's last words
#: are there, and a log of a day's server can be large (a cell's check reads it).
_LOG_TAIL_BYTES = 1 << 20


def out_of_memory_in(log_path: str | os.PathLike[str]) -> str:
    """The last ``java.lang.OutOfMemoryError`` line near the end of a server's log, or ""."""
    found = ""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - _LOG_TAIL_BYTES))
            for raw in log:
                line = raw.decode(errors="replace")
                if "java.lang.OutOfMemoryError" in line:
                    found = line[line.index("java.lang.OutOfMemoryError") :].strip()
    except OSError:
        pass
    return found[:300]


def parse_remote(url: str) -> Endpoint:
    """Check an ``sc://host:port[/;param=value...]`` URL; ConnectError when it is not one."""
    parts = urlsplit(url)
    if parts.scheme != "sc" or not parts.hostname:
        raise ConnectError(
            f"--remote takes sc://HOST:PORT ('local' for a server of this notebook, 'shared' "
            f"for the one of this user's notebooks), "
            f"not {redact(url)!r}."
        )
    try:
        port = parts.port or 15002
    except ValueError:
        raise ConnectError(f"Invalid port in --remote {redact(url)!r}.") from None
    return Endpoint(url=url, host=parts.hostname, port=port)


def redact(url: str) -> str:
    """``url`` without parameters (a token must never reach output or logs)."""
    return url.split(";", 1)[0].rstrip("/")


def reachable(endpoint: Endpoint, timeout: float = 1.0) -> str:
    """ "" when something accepts TCP connections at the endpoint, else why not."""
    try:
        socket.create_connection((endpoint.host, endpoint.port), timeout).close()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return ""

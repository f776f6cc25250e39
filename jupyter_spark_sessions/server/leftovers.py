"""What this user's kernels leave behind when they end without their own shutdown (a
JupyterHub stopping the server kills them; ``kill -9``; the out-of-memory killer):
their private folders in the system temp directory (``session_root``) and the Spark
UI secret files beside their connection files (``backends/local_master.write_ui_secret``).

The server extension removes them when the server starts and again when it exits,
after it has shut its kernels down. A folder goes only when its kernel's process is
gone (``session_root.remove_dead_kernel_folders``), a secret file only when its
kernel's connection file is gone: another server's live kernels keep theirs. A server
killed outright (a hub's SIGKILL after its stop timeout) runs no exit hook: its
kernels' leftovers go when a server or kernel of the user starts next. A folder under
a configured ``SparkSessionsConfig.session_root`` is the next kernel's to remove: the
server does not read the kernels' IPython configuration.
"""

from __future__ import annotations

import atexit
import logging
from pathlib import Path
from typing import Any

from ..backends.local_master import UI_SECRET_FILE
from ..session_root import read_private_json, remove_dead_kernel_folders

log = logging.getLogger(__name__)


def remove_orphan_ui_secrets(connection_dir: Path) -> list[Path]:
    """Remove the UI secret files in ``connection_dir`` whose kernel's connection file
    is gone; returns what was removed."""
    removed = []
    for path in connection_dir.glob(UI_SECRET_FILE.format(port="*")):
        record = read_private_json(path)
        if record is None:  # not a private file of this user's: not ours to judge
            continue
        if not (connection_dir / str(record.get("connection_file", ""))).exists():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def remove_leftovers(connection_dir: Path) -> None:
    """Remove dead kernels' folders and orphan UI secret files; never raises (a
    server's start or exit must not fail for them)."""
    try:
        folders = remove_dead_kernel_folders()
        secrets = remove_orphan_ui_secrets(connection_dir)
    except Exception:
        log.warning("jupyter_spark_sessions: could not remove dead kernels' files", exc_info=True)
        return
    if folders or secrets:
        log.info(
            "jupyter_spark_sessions: removed %d folder(s) and %d Spark UI secret file(s) "
            "that ended kernels left",
            len(folders),
            len(secrets),
        )


def install(server_app: Any) -> None:
    """Remove leftovers now, and at the server process's exit (which comes after the
    server has shut its kernels down: its cleanup runs before the interpreter exits)."""
    manager = getattr(server_app, "kernel_manager", None)
    folder = getattr(manager, "connection_dir", "") or server_app.runtime_dir
    connection_dir = Path(folder)
    remove_leftovers(connection_dir)
    atexit.register(remove_leftovers, connection_dir)

"""What keeps a Spark this project starts on a local master (``local``,
``local-cluster``) private: its driver, UI and workers on loopback, its scratch files in
the kernel's private folder, its RPC behind Spark's own secret, its UI answering only
the kernel's Jupyter server (a servlet filter and a secret file beside the kernel's
connection file). Used by the kernel's context and the local Connect server.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ..session_root import write_private_json


def is_local_master(master: str) -> bool:
    """True for a master whose executors all run on this machine (local, local-cluster)."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def tasks_run_in_driver(master: str) -> bool:
    """True for ``local`` and ``local[...]``, whose tasks run in the driver's JVM (not
    ``local-cluster``, whose executors are JVMs of their own)."""
    return master == "local" or master.startswith("local[")


def workers_on_this_machine(master: str) -> bool:
    """True for local masters and for a standalone master on this machine, whose
    workers are taken to be here too (``SparkSessionsConfig.env_shipping`` says
    otherwise when they are not)."""
    if is_local_master(master):
        return True
    if not master.startswith("spark://"):
        return False
    hosts = [part.rsplit(":", 1)[0] for part in master[len("spark://") :].split(",")]
    return all(_is_this_machine(host) for host in hosts)


def _is_this_machine(host: str) -> bool:
    try:
        own = {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return all(a.startswith("127.") or a == "::1" or a in own for a in addresses)


def local_master_defaults(master: str, scratch_dir: str | None = None) -> dict[str, str]:
    """Settings that keep a Spark this project starts on a local master private: its
    driver listens on loopback (unless the user's SPARK_LOCAL_IP says where Spark binds),
    and its scratch files (shuffle and spill data, the executors' copies of session files)
    go to ``scratch_dir``, inside the kernel's private folder (unless the user's
    SPARK_LOCAL_DIRS says where; the kernel's context gets it as SPARK_LOCAL_DIRS, see
    ``start_context``). Nothing for other masters."""
    if not is_local_master(master):
        return {}
    defaults = dict(LOCAL_MASTER_DEFAULTS) if "SPARK_LOCAL_IP" not in os.environ else {}
    if scratch_dir and "SPARK_LOCAL_DIRS" not in os.environ:
        defaults["spark.local.dir"] = scratch_dir
    return defaults


def local_master_env(master: str) -> dict[str, str]:
    """Environment for the JVM of a local master: ``SPARK_LOCAL_IP`` on loopback unless
    the user set it. Spark's UI binds to SPARK_LOCAL_IP, else to every interface; no
    setting moves it. local-cluster's master, workers and executors inherit it."""
    if is_local_master(master) and "SPARK_LOCAL_IP" not in os.environ:
        return {"SPARK_LOCAL_IP": LOOPBACK}
    return {}


LOOPBACK = "127.0.0.1"


#: Also for a context this project starts on a local master (local, local-cluster): its
#: driver listens on loopback only, since nothing outside the machine needs to reach it.
LOCAL_MASTER_DEFAULTS = {
    "spark.driver.bindAddress": LOOPBACK,  # the RPC and block manager ports
    "spark.driver.host": LOOPBACK,  # the address executors and the UI link use
}


#: Added for local masters (``local[...]``, ``local-cluster[...]``), whose Python workers
#: run the kernel's interpreter (or a local Connect server's, the same): Spark starts this
#: package's ``spark_daemon``, which keeps the workers out of the kernel's process group
#: (an Interrupt reaches only the interrupted cell's tasks) and has them import the
#: installed PySpark rather than Spark's zip of it.
LOCAL_PYTHON_DAEMON = {
    "spark.python.daemon.module": "jupyter_spark_sessions.backends.spark_daemon",
}


def python_daemon_defaults(master: str) -> dict[str, str]:
    """``LOCAL_PYTHON_DAEMON`` for a local master, nothing for others (their executors
    may run a Python without this package)."""
    return dict(LOCAL_PYTHON_DAEMON) if is_local_master(master) else {}


def authenticate_defaults(master: str) -> dict[str, str]:
    """``spark.authenticate=true`` for ``local`` and ``local[...]``, where Spark makes the
    secret itself (``SecurityManager.initializeAuth``): the driver's RPC and block
    manager then refuse a client without it (another local user's). Not for
    ``local-cluster``, whose executors would need a secret passed to them, nor for
    cluster masters, whose secret is the cluster's to distribute."""
    if tasks_run_in_driver(master):
        return {"spark.authenticate": "true"}
    return {}


# -- the Spark UI answers only its owner's Jupyter server --------------------------------

#: The servlet filter (java/jss/UiSecretFilter.java) and its parameter, through which
#: Spark hands the secret to it (``spark.<filter class>.param.<name>``; Spark redacts
#: the value, its key names a secret).
UI_FILTER = "jss.UiSecretFilter"
UI_SECRET_CONF = f"spark.{UI_FILTER}.param.secret"
#: The header the filter wants (``UiSecretFilter.HEADER``).
UI_SECRET_HEADER = "X-Jss-Ui-Secret"
#: ``<folder of the kernel's connection file>/jss-spark-ui-<port>.json``: how the
#: kernel's Jupyter server (server/spark_ui_route.py) learns a UI's secret.
UI_SECRET_FILE = "jss-spark-ui-{port}.json"


def ui_protection(
    master: str, conf: Mapping[str, str], secret_published: bool = False
) -> dict[str, str]:
    """Settings that make the UI of a context started on a local master refuse every
    request without a new random secret (``UiSecretFilter``); nothing when the user set
    ``spark.ui.filters`` (theirs win), turned the UI off, the master is not local, or no
    Jupyter server can learn the secret (not in a kernel with a connection file, unless
    the caller publishes it: ``secret_published``)."""
    if not is_local_master(master) or "spark.ui.filters" in conf:
        return {}
    if not secret_published and connection_file() is None:
        return {}
    if conf.get("spark.ui.enabled", "true").strip().lower() == "false":
        return {}
    # The filter is made by Spark's own class loader when the UI starts: the caller
    # launches the JVM with the jar on its class path (driver_jar.class_path_env).
    return {"spark.ui.filters": UI_FILTER, UI_SECRET_CONF: secrets.token_urlsafe(32)}


def connection_file() -> Path | None:
    """The running kernel's connection file (its Jupyter server knows it); None outside
    a kernel."""
    try:
        from ipykernel.connect import get_connection_file

        return Path(get_connection_file()).resolve()
    except Exception:  # not in a kernel, or no connection file
        return None


def write_ui_secret(ui_url: str | None, secret: str) -> Path | None:
    """Write the UI's port and secret to ``UI_SECRET_FILE`` beside the kernel's
    connection file (mode 0600, replaced atomically), for its Jupyter server only; the
    file names the connection file, so the server trusts it only while that kernel is
    its own. None when there is no UI or no connection file."""
    found = connection_file()
    port = urlsplit(ui_url).port if ui_url else None
    if found is None or port is None:
        return None
    target = found.parent / UI_SECRET_FILE.format(port=port)
    record = {"port": port, "secret": secret, "connection_file": found.name, "pid": os.getpid()}
    write_private_json(target, record)
    return target

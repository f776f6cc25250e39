"""What keeps a Spark this project starts on a local master (``local``,
``local-cluster``) private: its driver, UI and workers on loopback, its scratch files in
the kernel's private folder. Used by the kernel's context and the local Connect server.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def is_local_master(master: str) -> bool:
    """True for a master whose executors all run on this machine (local, local-cluster)."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


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

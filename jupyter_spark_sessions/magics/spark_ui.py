"""Links to Spark's own UI that go through the Jupyter server, for a browser that cannot
reach the driver's port (a remote JupyterHub): the project's server extension serves the
UI of a port of the server's machine at ``{base_url}spark-sessions/ui/<port>/``, behind
the server's authentication, adding the UI's secret when the port is a context this
project started in one of the server's kernels (``server/spark_ui_route.py``; such a UI
refuses every other request).

Pure (no Spark, no I/O). The paths are relative to the server's base URL, which the
kernel does not know: a view joins them with it (the sidebar with PageConfig's
``baseUrl``, which builds the same ``{baseUrl}spark-sessions/ui/{port}/jobs/job/?id={jobId}``).
Spark needs no setting for the pages: its UI prefixes every link and asset with the
``X-Forwarded-Context`` header the proxy sends (``UIUtils.uiRoot``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

#: The route of the project's server extension for a Spark UI on the server's machine
#: (not jupyter-server-proxy's ``proxy``: Spark's page scripts take the path segment
#: after ``proxy`` for the application id, and the UI refuses requests without its
#: secret, which only this route adds).
PROXY_ROUTE = "spark-sessions/ui"

#: What ``info`` says of a UI that wants the secret (a context, or a local Connect
#: server, this project started on a local master).
PROTECTED_NOTE = "only through this kernel's Jupyter server (the UI wants its secret)"

#: What ``info`` says of a UI that answers without the secret (a context the user
#: started, a cluster master's): anyone who reaches its port reads it.
UNPROTECTED_NOTE = (
    "not protected: this project did not start its context on a local master, so any "
    "local user (and, on a cluster master, the network) can read it"
)


def ui_port(ui_url: str | None) -> int | None:
    """The port of a Spark UI address (``http://127.0.0.1:4040`` -> 4040); None when
    there is no link to make (see ``no_link_reason``)."""
    if no_link_reason(ui_url):
        return None
    return urlsplit(ui_url or "").port


def no_link_reason(ui_url: str | None) -> str:
    """Why ``ui_url`` cannot be linked through the Jupyter server; "" when it can."""
    if not ui_url:
        return "the Spark UI is off (spark.ui.enabled=false)"
    parts = urlsplit(ui_url)
    if parts.scheme == "https":
        # The server extension (jupyter-server-proxy's handler) speaks plain HTTP only.
        return "the Spark UI uses HTTPS, which the Jupyter server's proxy does not speak"
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or port is None:
        return f"{ui_url!r} is not an http://HOST:PORT address"
    return ""


def jobs_path(ui_url: str | None) -> str | None:
    """The session's Spark UI jobs page, relative to the server's base URL
    (``spark-sessions/ui/4040/jobs/``); None when there is no link."""
    port = ui_port(ui_url)
    return None if port is None else f"{PROXY_ROUTE}/{port}/jobs/"


def job_path(ui_url: str | None, job_id: int) -> str | None:
    """The Spark UI page of one job, relative to the server's base URL
    (``spark-sessions/ui/4040/jobs/job/?id=7``); None when there is no link."""
    port = ui_port(ui_url)
    if port is None:
        return None
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 0:
        raise ValueError(f"A Spark job id is an integer >= 0, not {job_id!r}.")
    return f"{PROXY_ROUTE}/{port}/jobs/job/?id={job_id}"


def page_path(ui_url: str | None, page: str) -> str | None:
    """A page of the Spark UI (``page``: a path under it, as
    ``SessionView.operations_page``), relative to the server's base URL; None when
    there is no link."""
    port = ui_port(ui_url)
    return None if port is None or not page else f"{PROXY_ROUTE}/{port}/{page.lstrip('/')}"


def group_path(ui_url: str | None, job_ids: Sequence[int]) -> str | None:
    """The Spark UI page for a job group: its job's page when it ran exactly one, else
    the jobs page (Spark's UI has no page per group; its jobs table shows the group)."""
    if len(job_ids) == 1:
        return job_path(ui_url, job_ids[0])
    return jobs_path(ui_url)


def join_base_url(base_url: str, path: str) -> str:
    """``path`` (from the functions above) under the server's base URL:
    ``join_base_url("/user/ann/", "spark-sessions/ui/4040/jobs/")`` ->
    ``/user/ann/spark-sessions/ui/4040/jobs/``."""
    return "/" + "/".join(part for part in (base_url.strip("/"), path.lstrip("/")) if part)


def base_url_from_environ(environ: Mapping[str, str]) -> str:
    """The Jupyter server's base URL as a kernel can guess it: JupyterHub's
    ``JUPYTERHUB_SERVICE_PREFIX`` (which single-user servers pass on to kernels), else
    ``/``. A server started with another ``--ServerApp.base_url`` is not seen."""
    prefix = environ.get("JUPYTERHUB_SERVICE_PREFIX", "").strip()
    return "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"

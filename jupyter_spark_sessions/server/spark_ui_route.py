"""Jupyter server extension: the Spark UI of this server's own kernels, through the
server's authentication.

    {base_url}spark-sessions/ui/<port>/<path>

A context this project starts on a local master answers only requests carrying its
UI's secret (``spark.ui.filters=jss.UiSecretFilter``, java/jss/UiSecretFilter.java);
the kernel writes the port and the secret to ``jss-spark-ui-<port>.json`` (mode 0600)
beside its connection file (``backends/local_master.py``). This route, authenticated
and authorized like the server's kernel API, forwards to ``127.0.0.1:<port>`` with
jupyter-server-proxy's own proxy handler, adding the secret when the file belongs to
one of this server's live kernels (or names the UI of this user's shared Connect
server: ``shared_driver``). Another user's server has no such file, so its
``/proxy/<port>/`` (and a direct ``curl``) get the filter's 403. A port without a
secret (a context the user started, ``adopt``) is forwarded without one, as
jupyter-server-proxy's ``/proxy/<port>/`` would.

Nothing of the browser's Jupyter credentials (``Authorization``, ``Cookie``) is passed
on to the port, which may be anyone's. The route's path has no ``/proxy/`` segment:
Spark's page scripts take the segment after ``proxy`` for the application id, which
broke the Environment, Executors and SQL tabs under jupyter-server-proxy.

A redirect of the UI stays under the route. Spark's own redirects (its root to
``/jobs/``, a kill link back to its list, ``/connect`` and other pages without a slash)
name an absolute URL built from the request's ``Host``, which is the Jupyter server's:
the browser landed on ``{base_url}jobs/``, Jupyter's 404. Such an address (the
browser's host, or the UI's own) is made a path here, which jupyter-server-proxy then
puts under the route, as it does for a redirect to a path. This covers every UI the
route serves (a Spark Connect server's, a context the user started), not only the
contexts whose root ``jss.UiRootRedirect`` makes relative.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from jupyter_server.utils import url_path_join
from jupyter_server_proxy.handlers import LocalProxyHandler  # type: ignore[import-untyped]
from tornado import web

from ..backends.local_master import UI_SECRET_FILE, UI_SECRET_HEADER
from ..session_root import read_private_json
from ..shared_driver.rendezvous import Rendezvous, base_dir

#: Under the server's base URL.
ROUTE_PREFIX = "spark-sessions/ui"
ROUTE = rf"/{ROUTE_PREFIX}/(\d+)(/.*)"
#: Headers of the browser's request that stay on this side of the proxy.
_DROPPED = ("Authorization", "Cookie", UI_SECRET_HEADER)
_REDIRECTS = (301, 302, 303, 307, 308)


class SparkUiHandler(LocalProxyHandler):  # type: ignore[misc]
    """jupyter-server-proxy's ``LocalProxyHandler`` (its authentication on every
    request, redirects rewritten under the route, websockets refused), with this
    route as the UI's ``X-Forwarded-Context`` and the UI's secret added."""

    auth_resource = "kernels"

    def initialize(self, **kwargs: Any) -> None:
        self._secret: str | None = None

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        await super().prepare(*args, **kwargs)  # authenticated, or 302 / 403
        # Authorized like the server's kernel API (a kernel's UI shows what it runs).
        allowed = self.authorizer.is_authorized(self, self.current_user, "read", "kernels")
        if inspect.isawaitable(allowed):
            allowed = await allowed
        if not allowed:
            raise web.HTTPError(403)

    async def http_get(self, port: str, proxied_path: str) -> Any:
        return await self.proxy(port, proxied_path)

    def proxy(self, port: str, proxied_path: str) -> Any:
        self.proxy_base = f"{ROUTE_PREFIX}/{int(port)}"  # X-Forwarded-Context, redirects
        self._secret = kernel_ui_secret(self.kernel_manager, int(port))
        return super().proxy(port, proxied_path)

    async def open(self, port: str, proxied_path: str) -> Any:
        raise NotImplementedError("the Spark UI has no websockets")  # pragma: no cover

    def proxy_request_headers(self) -> Any:
        headers = super().proxy_request_headers()
        for name in _DROPPED:
            headers.pop(name, None)
        if self._secret:
            headers[UI_SECRET_HEADER] = self._secret
        return headers


def redirect_inside_route(response: Any, request: Any, port: str) -> None:
    """jupyter-server-proxy's ``rewrite_response`` hook: a redirect of the UI on
    ``port`` to an absolute URL of its own (the browser's host, which the proxy passes
    on as ``Host``, or the UI's address) becomes that URL's path, which the proxy then
    puts under the route. A redirect elsewhere is left as it is."""
    if response.code not in _REDIRECTS:
        return
    location = response.headers.get("Location")
    if not location:
        return
    target = urlsplit(location)
    own = {request.host, f"localhost:{port}", f"127.0.0.1:{port}"}
    if target.netloc and target.netloc in own:
        path = target.path or "/"
        response.headers["Location"] = urlunsplit(("", "", path, target.query, target.fragment))


def kernel_ui_secret(kernel_manager: Any, port: int) -> str | None:
    """The secret of the Spark UI on ``port`` when a live kernel of this server wrote
    it (``backends/local_master.write_ui_secret``); None otherwise. A file of a kernel
    that is gone is removed."""
    own: dict[Path, Path] = {}  # folder of each kernel's connection file -> the file
    for kernel_id in list(kernel_manager.list_kernel_ids()):
        try:
            connection_file = Path(kernel_manager.get_kernel(kernel_id).connection_file)
        except Exception:
            continue
        if connection_file.name:
            resolved = connection_file.resolve()
            own[resolved] = resolved.parent
    for folder in set(own.values()):
        path = folder / UI_SECRET_FILE.format(port=port)
        record = read_private_json(path)
        if record is None or record.get("port") != port:
            continue
        if folder / str(record.get("connection_file", "")) in own:
            secret = record.get("secret")
            return secret if isinstance(secret, str) and secret else None
        if not (folder / str(record.get("connection_file", ""))).exists():
            path.unlink(missing_ok=True)  # its kernel is gone
    return shared_driver_ui_secret(port)


def shared_driver_ui_secret(port: int) -> str | None:
    """The secret of the UI on ``port`` when it is the UI of this user's shared Spark
    Connect server (its record: ``shared_driver/rendezvous.py``)."""
    record = Rendezvous(base_dir()).read()
    if record is None or record.ui_port != port or not record.keeper.alive():
        return None
    return record.ui_secret or None


def load_handlers(server_app: Any) -> None:
    """Add the route to the server."""
    web_app = server_app.web_app
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    options = {"absolute_url": False, "rewrite_response": redirect_inside_route}
    web_app.add_handlers(".*$", [(route, SparkUiHandler, options)])

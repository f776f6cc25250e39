"""A redirect of a Spark UI through the Jupyter server's route stays under the route
(issue 47, 4): Spark's own redirects name an absolute URL built from the ``Host`` the
proxy passes on (the Jupyter server's), so the shared driver's "Spark UI" link (the UI's
root) landed on ``{base_url}jobs/``, Jupyter's 404. The hook makes such an address a
path, which jupyter-server-proxy puts under the route. The browser test clicks every
link of the sidebar through a real server (tests/e2e/test_sidebar_browser.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from jupyter_server_proxy.handlers import RewritableResponse
from tornado.httpclient import HTTPRequest, HTTPResponse
from tornado.httputil import HTTPHeaders

from jupyter_spark_sessions.server.spark_ui_route import redirect_inside_route

JUPYTER = "127.0.0.1:8888"  # the browser's host: the Jupyter server's
PORT = "4041"  # the UI's


def rewritten(location: str, code: int = 302) -> str:
    """The Location the hook leaves of a UI's reply ``code`` to ``location``."""
    headers = HTTPHeaders({"Location": location})
    reply = HTTPResponse(HTTPRequest(f"http://localhost:{PORT}/"), code, headers=headers)
    response = RewritableResponse(orig_response=reply)
    redirect_inside_route(response, SimpleNamespace(host=JUPYTER), PORT)
    return str(response.headers["Location"])


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        # Spark's root (a Spark Connect server's, a context the user started): the
        # browser's host, as Spark built it from the Host header.
        (f"http://{JUPYTER}/jobs/", "/jobs/"),
        # The UI's own address, with a query (a kill link's way back).
        (f"http://localhost:{PORT}/stages/?x=1", "/stages/?x=1"),
        (f"http://127.0.0.1:{PORT}", "/"),
        # A path or a relative address: the proxy's own handling (under the route).
        ("/jobs/", "/jobs/"),
        ("jobs/", "jobs/"),
        # Another site, or another port of this machine: not the UI's, left alone.
        ("https://spark.apache.org/docs/", "https://spark.apache.org/docs/"),
        ("http://127.0.0.1:4042/jobs/", "http://127.0.0.1:4042/jobs/"),
    ],
)
def test_a_redirect_to_the_uis_own_address_becomes_a_path(location: str, expected: str) -> None:
    assert rewritten(location) == expected


@pytest.mark.parametrize("code", [301, 303, 307, 308])
def test_every_kind_of_redirect_is_kept_under_the_route(code: int) -> None:
    assert rewritten(f"http://{JUPYTER}/jobs/", code) == "/jobs/"


def test_a_page_that_is_not_a_redirect_keeps_its_headers() -> None:
    assert rewritten(f"http://{JUPYTER}/jobs/", 200) == f"http://{JUPYTER}/jobs/"

"""The Spark UI links through the Jupyter server (jupyter_spark_sessions.magics.spark_ui): pure
functions; tests/test_spark_ui_proxy.py opens them through a real server."""

from __future__ import annotations

import pytest

from jupyter_spark_sessions.backends.connect import REMOTE_UI_NOTE
from jupyter_spark_sessions.board.snapshot import SessionView
from jupyter_spark_sessions.magics import session_magics, spark_ui


def test_job_path_is_the_proxied_job_page_of_the_ui_port() -> None:
    assert spark_ui.job_path("http://127.0.0.1:4040", 7) == "spark-sessions/ui/4040/jobs/job/?id=7"
    assert (
        spark_ui.job_path("http://driver.example.org:4041/", 0)
        == "spark-sessions/ui/4041/jobs/job/?id=0"
    )


def test_jobs_path_is_the_sessions_proxied_jobs_page() -> None:
    assert spark_ui.jobs_path("http://127.0.0.1:4040") == "spark-sessions/ui/4040/jobs/"


def test_group_links_its_only_job_else_the_jobs_page() -> None:
    url = "http://127.0.0.1:4040"
    assert spark_ui.group_path(url, [3]) == "spark-sessions/ui/4040/jobs/job/?id=3"
    assert spark_ui.group_path(url, [3, 4]) == "spark-sessions/ui/4040/jobs/"
    assert spark_ui.group_path(url, []) == "spark-sessions/ui/4040/jobs/"


@pytest.mark.parametrize(
    ("ui_url", "reason"),
    [
        ("", "the Spark UI is off"),
        (None, "the Spark UI is off"),
        ("https://127.0.0.1:4440", "HTTPS"),
        ("http://127.0.0.1", "not an http://HOST:PORT address"),
        ("http://127.0.0.1:notaport", "not an http://HOST:PORT address"),
        ("spark://127.0.0.1:7077", "not an http://HOST:PORT address"),
    ],
)
def test_no_link_without_a_plain_http_ui_and_the_reason_says_why(
    ui_url: str | None, reason: str
) -> None:
    assert reason in spark_ui.no_link_reason(ui_url)
    assert spark_ui.ui_port(ui_url) is None
    assert spark_ui.jobs_path(ui_url) is None
    assert spark_ui.job_path(ui_url, 1) is None
    assert spark_ui.group_path(ui_url, [1]) is None


def test_a_linkable_ui_has_no_reason() -> None:
    assert spark_ui.no_link_reason("http://127.0.0.1:4040") == ""
    assert spark_ui.ui_port("http://127.0.0.1:4040") == 4040


@pytest.mark.parametrize("job_id", [-1, 1.0, "1", True])
def test_job_path_refuses_what_is_not_a_job_id(job_id: object) -> None:
    with pytest.raises(ValueError, match="job id"):
        spark_ui.job_path("http://127.0.0.1:4040", job_id)  # type: ignore[arg-type]


def test_join_base_url_puts_the_path_under_the_servers_base_url() -> None:
    path = "spark-sessions/ui/4040/jobs/job/?id=2"
    assert spark_ui.join_base_url("/", path) == "/spark-sessions/ui/4040/jobs/job/?id=2"
    assert (
        spark_ui.join_base_url("/user/ann/", path)
        == "/user/ann/spark-sessions/ui/4040/jobs/job/?id=2"
    )
    assert (
        spark_ui.join_base_url("/user/ann", path)
        == "/user/ann/spark-sessions/ui/4040/jobs/job/?id=2"
    )
    assert spark_ui.join_base_url("", path) == "/spark-sessions/ui/4040/jobs/job/?id=2"


def test_base_url_is_jupyterhubs_prefix_else_the_root() -> None:
    assert spark_ui.base_url_from_environ({}) == "/"
    assert spark_ui.base_url_from_environ({"JUPYTERHUB_SERVICE_PREFIX": "/user/ann/"}) == (
        "/user/ann/"
    )
    assert spark_ui.base_url_from_environ({"JUPYTERHUB_SERVICE_PREFIX": "/user/ann"}) == (
        "/user/ann/"
    )
    assert spark_ui.base_url_from_environ({"JUPYTERHUB_SERVICE_PREFIX": "/"}) == "/"


def _view(backend: str, ui_url: str, ui_note: str = "") -> SessionView:
    return SessionView(
        "a", "created", backend, "local[2]", "s", True, "/tmp/a", ui_url=ui_url, ui_note=ui_note
    )


def test_info_shows_the_ui_and_its_path_through_the_jupyter_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ann/")
    assert session_magics._ui_text(_view("classic", "http://127.0.0.1:4040")) == (
        "http://127.0.0.1:4040, through the Jupyter server: /user/ann/spark-sessions/ui/4040/jobs/"
    )
    assert session_magics._ui_text(_view("classic", "")) == "off"
    # The session's view says why it has no link; the magic only words it.
    assert session_magics._ui_text(_view("connect", "", REMOTE_UI_NOTE)) == (
        f"not linked: {REMOTE_UI_NOTE}"
    )
    assert "HTTPS" in session_magics._ui_text(_view("classic", "https://127.0.0.1:4440"))

"""The undocumented parts of the Spark Connect client that ``backends/connect.py``
relies on, checked against the installed PySpark (no server needed). When an upgrade
changes one, this module fails and names the wrapper to fix."""

from __future__ import annotations

import inspect
import os
import threading
from typing import Any

import pytest

from jupyter_spark_sessions.backends import connect, connect_endpoint, connect_errors


def test_operation_progress_ends_inside_the_with_block_that_sees_the_error() -> None:
    # operation_error() reads the exception leaving the client's `with Progress(...)`.
    from pyspark.sql.connect.client.core import SparkConnectClient
    from pyspark.sql.connect.shell.progress import Progress, ProgressHandler

    source = inspect.getsource(SparkConnectClient)
    assert source.count("with Progress(handlers=self._progress_handlers") >= 2
    seen: list[Any] = []

    class Handler(ProgressHandler):
        def __call__(self, stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
            if done:
                seen.append((operation_id, connect.operation_error()))

    with pytest.raises(ValueError), Progress(handlers=[Handler()], operation_id="op-1"):
        raise ValueError("[OPERATION_CANCELED] Operation has been canceled.")
    with Progress(handlers=[Handler()], operation_id="op-2"):
        pass
    assert seen[0][0] == "op-1" and connect_errors.is_cancellation(seen[0][1])
    assert seen[1] == ("op-2", None)


def test_client_retry_policy_endpoint_and_release_without_a_server() -> None:
    from pyspark.sql.connect.client.retries import DefaultPolicy
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote("sc://localhost:1/;token=secret").create()
    try:
        connect.bound_retries(session, 1.0)
        (policy,) = session.client.get_retry_policies()
        assert isinstance(policy, DefaultPolicy) and policy.max_backoff == 250
        endpoint = connect.session_endpoint(session)
        assert (endpoint.host, endpoint.port, endpoint.display) == (
            "localhost",
            1,
            "sc://localhost:1",
        )
        assert "secret" not in endpoint.url
        # The user its server keys the session by (the UI's session page too).
        assert connect.client_user_id(session) == (
            os.environ.get("SPARK_USER", os.environ.get("USER")) or ""
        )
        connect.add_tags(session, ["jss:a:1"])
        assert connect.current_tags(session) == {"jss:a:1"}
        connect.remove_tags(session, ["jss:a:1"])
        assert connect.current_tags(session) == set()
        handler = connect.register_progress(session, lambda *args: None)
        connect.unregister_progress(session, handler)
    finally:
        connect.release(session)  # the server is not there: best effort, bounded
    assert connect.is_stopped(session)


def test_remote_urls_are_checked_and_redacted() -> None:
    endpoint = connect_endpoint.parse_remote("sc://spark.example:443/;token=abc;use_ssl=true")
    assert endpoint.display == "sc://spark.example:443"
    assert connect_endpoint.redact(endpoint.url) == "sc://spark.example:443"
    assert connect_endpoint.parse_remote("sc://h").port == 15002
    for bad in ("http://h:1", "sc://", "h:15002", "sc://h:notaport"):
        with pytest.raises(connect.ConnectError):
            connect_endpoint.parse_remote(bad)
    assert connect_endpoint.reachable(connect_endpoint.parse_remote("sc://localhost:1"), 0.5)


def test_active_connect_session_is_a_thread_local_the_client_reads() -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(ConnectSession.__dict__["_active_session"], threading.local)
    source = inspect.getsource(ConnectSession.getActiveSession)
    assert "cls._active_session" in source


def test_interrupt_operation_exists_on_connect_sessions() -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert list(inspect.signature(ConnectSession.interruptOperation).parameters) == [
        "self",
        "op_id",
    ]


def test_streaming_calls_reach_the_connect_writers_session() -> None:
    # backends/streaming_calls reads the session a Connect DataStreamWriter writes with
    # from its `_session` (set in its __init__) and wraps its start and toTable.
    from pyspark.sql.connect.streaming.readwriter import DataStreamWriter

    assert "self._session = session" in inspect.getsource(DataStreamWriter.__init__)
    for name in ("start", "toTable"):
        assert callable(getattr(DataStreamWriter, name)), name

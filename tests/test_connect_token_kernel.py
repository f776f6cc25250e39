"""A token with a host other than ``localhost`` makes the Connect client use TLS: against
the plaintext local server (``--remote local``) reached as 127.0.0.1, ``create`` is one
line that says so, at once, through a real kernel (jupyter_client)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import start_extension_kernel

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

CONF = (
    "c.SparkSessionsConfig.connect_master = 'local[1]'\n"
    "c.SparkSessionsConfig.connect_conf = {'spark.ui.enabled': 'false'}\n"
    "c.SparkSessionsConfig.connect_retry_seconds = 3.0\n"
)

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = start_extension_kernel(tmp_path_factory, CONF)
    k.ok("%spark_session create c1 --remote local")  # a plaintext server with a token
    yield k
    k.shutdown()


def test_a_token_to_127_0_0_1_of_a_plaintext_server_is_one_line_at_once(kernel: Kernel) -> None:
    port = kernel.value(f"{REGISTRY}.local_connect_server.endpoint.port")
    started = time.monotonic()
    result = kernel.execute(f"%spark_session create t --remote sc://127.0.0.1:{port}/;token=wrong")
    seconds = time.monotonic() - started
    print(f"create with a token to 127.0.0.1: {seconds:.2f} s")
    assert result.usage_error == (
        f"The Spark Connect server at sc://127.0.0.1:{port} does not speak TLS, but the "
        "Connect client uses TLS when it has a token unless the host is `localhost`: write "
        f"sc://localhost:{port}/;token=... instead (the same server, no TLS), or enable TLS "
        "on the server."
    ), result.stderr
    output = result.stdout + result.stderr
    assert "wrong" not in output and "WRONG_VERSION_NUMBER" not in output, output
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1, output
    assert seconds < 5
    listing = kernel.ok("%spark_session list").stdout
    assert [line.split()[0] for line in listing.splitlines()[2:] if line.strip()] == ["c1"]

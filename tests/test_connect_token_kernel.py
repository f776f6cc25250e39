"""A token with a host other than ``localhost`` makes the Connect client use TLS: against
the plaintext local server (``--remote local``) reached as 127.0.0.1, ``create`` is one
line that says so, at once, through a real kernel (jupyter_client)."""

from __future__ import annotations

import time

import pytest
from conftest import SharedKernel

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"


@pytest.fixture(scope="module")
def kernel(shared_kernel: SharedKernel) -> Kernel:
    """The run's shared kernel (its configuration has the local Connect server's
    settings), reset for this module, with one Connect session."""
    k = shared_kernel.reset()
    k.ok("%spark_session create c1 --remote local")  # a plaintext server with a token
    return k


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

"""The REST relay to kernels behind a gateway: a real Jupyter Kernel Gateway runs the
kernels, a real Jupyter server (``--GatewayClient.url``, with the gateway's token) runs
the relay, and the relay's requests reach the busy kernel's control channel through the
gateway's websocket; its errors say what is true in gateway mode."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e.gateway import KernelGateway, lab_behind
from e2e.lab import LabServer
from e2e.waiting import running
from test_server_relay import cancel_a_busy_cell_through_the_relay, relay

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGateway]:
    with running(KernelGateway(tmp_path_factory.mktemp("gateway"))) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, gateway: KernelGateway) -> Iterator[LabServer]:
    with running(lab_behind(gateway, tmp_path_factory.mktemp("gateway-lab"))) as server:
        yield server


def start_kernel(lab: LabServer, gateway: KernelGateway) -> tuple[str, Kernel]:
    """A kernel started through the server (which asks the gateway), and a client
    attached to it on the gateway's machine."""
    kernel_id: str = lab.api("POST", "/api/kernels", {"name": "python3"})["id"]
    return kernel_id, Kernel.attach(str(gateway.connection_file(kernel_id)))


@pytest.fixture(scope="module")
def sessions(lab: LabServer, gateway: KernelGateway) -> Iterator[tuple[str, Kernel]]:
    kernel_id, kernel = start_kernel(lab, gateway)
    kernel.ok("%load_ext jupyter_spark_sessions\n%spark_session create a\n%spark_session create b")
    yield kernel_id, kernel
    kernel.close()


def test_relay_through_a_gateway_lists_and_cancels_and_spares_the_other_session(
    lab: LabServer, sessions: tuple[str, Kernel]
) -> None:
    # The shell is busy: only the control channel, through the gateway, answers.
    cancel_a_busy_cell_through_the_relay(lab, *sessions)


def test_relay_errors_say_what_is_true_behind_a_gateway(
    lab: LabServer, gateway: KernelGateway
) -> None:
    # A kernel that has not loaded the extension: the gateway passed the request on,
    # nobody answered.
    kernel_id, kernel = start_kernel(lab, gateway)
    try:
        kernel.ok("1 + 1")
        status, reply = relay(lab, kernel_id, {"version": 1, "action": "list"})
        assert status == 504 and reply["error"]["code"] == "no_reply", reply
        assert reply["error"]["message"] == (
            f"The kernel did not answer through the gateway at {gateway.url} within 10 s: has "
            "it run `%load_ext jupyter_spark_sessions`, and does the gateway pass control "
            "messages?"
        )
    finally:
        kernel.close()
    # The gateway shut the kernel down behind the server's back.
    gateway.api("DELETE", f"/api/kernels/{kernel_id}")
    status, reply = relay(lab, kernel_id, {"version": 1, "action": "list"})
    assert status == 404 and reply["error"]["code"] == "unknown_kernel", reply
    assert kernel_id in reply["error"]["message"]

"""The sign frontends read to know that a kernel has loaded the extension: a help link
in the standard kernel_info reply, answered on the control channel even while a cell
runs (the sidebar asks there first, so that a kernel without the extension is never
sent a message type it does not know)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_spark_sessions.kernel.marker import DOCS_URL, MARKER_TEXT
from kernel_driver import Kernel

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    root: Path = tmp_path_factory.mktemp("marker")
    k = Kernel(env={"IPYTHONDIR": str(root / "ipython")}, cwd=str(root))
    yield k
    k.shutdown()


def marker_links(kernel: Kernel) -> list[dict[str, str]]:
    reply = kernel.control("kernel_info_request", {})
    assert reply["content"]["status"] == "ok"
    return [link for link in reply["content"]["help_links"] if link["text"] == MARKER_TEXT]


def test_kernel_info_lists_the_marker_only_while_the_extension_is_loaded(kernel: Kernel) -> None:
    assert marker_links(kernel) == []
    kernel.ok("%load_ext jupyter_spark_sessions")
    assert marker_links(kernel) == [{"text": MARKER_TEXT, "url": DOCS_URL}]
    kernel.ok("%reload_ext jupyter_spark_sessions")  # unload + load: still one link
    assert marker_links(kernel) == [{"text": MARKER_TEXT, "url": DOCS_URL}]
    kernel.ok("%unload_ext jupyter_spark_sessions")
    assert marker_links(kernel) == []
    kernel.ok("%load_ext jupyter_spark_sessions")
    assert len(marker_links(kernel)) == 1


def test_kernel_info_is_answered_on_the_control_channel_while_a_cell_is_busy(
    kernel: Kernel,
) -> None:
    msg_id = kernel.send_shell("execute_request", {"code": "import time; time.sleep(5)"})
    kernel.wait_for_iopub(
        lambda m: (
            m["parent_header"].get("msg_id") == msg_id
            and m["msg_type"] == "status"
            and m["content"]["execution_state"] == "busy"
        )
    )
    started = time.monotonic()
    assert len(marker_links(kernel)) == 1
    assert time.monotonic() - started < 1.0
    kernel.collect(msg_id)

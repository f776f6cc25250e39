"""A real Jupyter Kernel Gateway (from the package index) for the tests of kernels
behind a gateway: a Jupyter server started with ``server_args`` runs none of its kernels
itself, the gateway does (the set-up of docs/deployment.md)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from .lab import KERNEL_CONFIG, LabServer, free_port
from .waiting import stop_process, wait_for_server, wait_until


class KernelGateway:
    """``jupyter kernelgateway`` on 127.0.0.1 with a random token. Its kernels load
    ``kernel_config`` and write their connection files to ``runtime_dir``, where a test
    attaches to them as a second frontend would."""

    def __init__(self, base: Path, kernel_config: str = KERNEL_CONFIG) -> None:
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.runtime_dir = base / "gateway-runtime"
        ipython = base / "gateway-ipython"
        (ipython / "profile_default").mkdir(parents=True, exist_ok=True)
        (ipython / "profile_default" / "ipython_config.py").write_text(kernel_config)
        env = dict(
            os.environ,
            IPYTHONDIR=str(ipython),
            PYSPARK_PYTHON=sys.executable,
            JUPYTER_RUNTIME_DIR=str(self.runtime_dir),
        )
        command = [
            sys.executable,
            "-m",
            "jupyter",
            "kernelgateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            f"--KernelGatewayApp.auth_token={self.token}",
            # jupyter_server lists the gateway's kernels to follow them.
            "--JupyterWebsocketPersonality.list_kernels=True",
        ]
        self.log = open(base / "kernel-gateway.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(
            command, env=env, cwd=base, stdout=self.log, stderr=self.log
        )
        wait_for_server(self.process, self._answers, "the kernel gateway", self.log.name, 60, 0.3)

    def _answers(self) -> bool:
        self.api("GET", "/api")
        return True

    def server_args(self) -> tuple[str, ...]:
        """The Jupyter server options that send its kernels to this gateway."""
        return (f"--GatewayClient.url={self.url}", f"--GatewayClient.auth_token={self.token}")

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            self.url + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def connection_file(self, kernel_id: str, timeout: float = 30) -> Path:
        """The connection file of the gateway's kernel ``kernel_id``, once written."""
        path = self.runtime_dir / f"kernel-{kernel_id}.json"
        if not wait_until(path.exists, timeout, 0.1):
            raise TimeoutError(f"no {path}: see {self.log.name}")
        return path

    def stop(self) -> None:
        stop_process(self.process, self.log)


def lab_behind(gateway: KernelGateway, base: Path) -> LabServer:
    """A JupyterLab serving ``base``/root whose kernels ``gateway`` runs."""
    (base / "root").mkdir()
    return LabServer(base / "root", extra_args=gateway.server_args())

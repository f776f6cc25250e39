"""Jupyter server extension: the shared Spark Connect server of this user's notebooks,
as the sidebar's "Shared driver" section shows it.

    GET {base_url}jupyter-spark-sessions/api/shared-driver

``{"server": null}`` when none runs; else the server (state, master, task slots, the
JVM's resident memory, uptime, the Spark UI route) and every notebook with a lease on
it (``shared_driver/rendezvous.py``), this server's kernels or not, with each session's
running jobs and tasks and its share of the slots, read from the server's own Spark
UI (its REST API, with the UI's secret from the record). A notebook of this server is
``"this_server": true``: its sessions can be cancelled through the REST relay.

Authenticated and authorized like the server's kernel API (resource ``kernels``).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import psutil  # type: ignore[import-untyped]
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from ..backends.local_master import UI_SECRET_HEADER
from ..shared_driver.rendezvous import RUNNING, Rendezvous, ServerRecord, base_dir
from .spark_ui_route import ROUTE_PREFIX as UI_ROUTE_PREFIX

ROUTE = r"/jupyter-spark-sessions/api/shared-driver"
#: A Spark Connect operation's job tag names its session (Spark's ExecuteJobTag).
_SESSION_TAG = "_Session_{}_Operation_"
#: Seconds a read of the server's UI may take (a busy JVM answers late; the sidebar
#: asks again 3 s later whatever happens).
_UI_TIMEOUT = 5.0
#: The Spark application id of each shared server seen (by its record's id).
_app_ids: dict[str, str] = {}


class SharedDriverHandler(APIHandler):
    """``GET``: the shared server and the notebooks' sessions on it."""

    auth_resource = "kernels"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        rendezvous = Rendezvous(base_dir())
        record = rendezvous.read()
        if record is None or record.state != RUNNING or not record.keeper.alive():
            self.finish(json.dumps({"server": None, "notebooks": []}))
            return
        jobs, slots = await _running_jobs(record)
        own_kernels = set(self.kernel_manager.list_kernel_ids())
        # The UI's task counts run ahead of the slots for a moment (a task ended, its
        # event not yet in): shares are of the larger of the two.
        busy = sum(int(j.get("numActiveTasks", 0)) for j in jobs)
        capacity = max(slots or 0, busy)
        notebooks = []
        for lease in rendezvous.leases(record):
            if not lease.kernel.alive() or not lease.sessions:
                continue
            sessions = []
            for name, held in sorted(lease.sessions.items()):
                mine = [j for j in jobs if _belongs(j, held["session_id"])]
                tasks = sum(int(j.get("numActiveTasks", 0)) for j in mine)
                sessions.append(
                    {
                        "name": name,
                        "running_jobs": len(mine) if slots else None,  # None: unknown
                        "active_tasks": tasks,
                        "slot_share": round(tasks / capacity, 3) if slots else None,
                    }
                )
            notebooks.append(
                {
                    "notebook": self._shown_path(lease.notebook) or f"kernel {lease.kernel.pid}",
                    "kernel_id": lease.kernel_id,
                    "this_server": lease.kernel_id in own_kernels,
                    "sessions": sessions,
                }
            )
        self.finish(json.dumps({"server": _server(record, slots), "notebooks": notebooks}))

    def _shown_path(self, notebook: str) -> str:
        """A notebook's path as this server's file browser shows it (relative to its
        root) when it is under that root; else as its kernel was told."""
        root = str(getattr(self.contents_manager, "root_dir", "") or "")
        if root and os.path.isabs(notebook):
            relative = os.path.relpath(notebook, root)
            if not relative.startswith(os.pardir):
                return relative
        return notebook


def _server(record: ServerRecord, slots: int | None) -> dict[str, Any]:
    try:
        memory = psutil.Process(record.server_pid).memory_info().rss
    except psutil.Error:
        memory = None
    return {
        "id": record.id,
        "master": record.master,
        "slots": slots,
        "memory_bytes": memory,
        "uptime_s": round(time.time() - record.started_at, 1),
        # With no notebook on it, it stops after this long (None: not known).
        "idle_stop_s": record.idle_timeout or None,
        "ui_path": f"{UI_ROUTE_PREFIX}/{record.ui_port}/" if record.ui_port else "",
    }


def _belongs(job: dict[str, Any], session_id: str) -> bool:
    marker = _SESSION_TAG.format(session_id)
    return any(marker in str(tag) for tag in job.get("jobTags", []))


async def _running_jobs(record: ServerRecord) -> tuple[list[dict[str, Any]], int | None]:
    """The server's running jobs and its task slots, from its Spark UI's REST API
    (([], None) when the UI is off or does not answer in time)."""
    if not record.ui_port:
        return [], None
    client = AsyncHTTPClient()
    base = f"http://127.0.0.1:{record.ui_port}/api/v1/applications"
    headers = {UI_SECRET_HEADER: record.ui_secret} if record.ui_secret else {}

    async def get(url: str) -> Any:
        response = await client.fetch(url, headers=headers, request_timeout=_UI_TIMEOUT)
        return json.loads(response.body)

    try:
        app_id = _app_ids.get(record.id) or (await get(base))[0]["id"]
        _app_ids[record.id] = app_id  # one application per server: asked once
        jobs = await get(f"{base}/{app_id}/jobs?status=running")
        executors = await get(f"{base}/{app_id}/executors")
    except (HTTPClientError, OSError, ValueError, KeyError, IndexError):
        return [], None
    slots = sum(int(e.get("totalCores", 0)) for e in executors if e.get("id") != "driver")
    if not slots:  # a local master: the driver runs the tasks
        slots = sum(int(e.get("totalCores", 0)) for e in executors)
    return list(jobs), slots or None


def load_handlers(server_app: Any) -> None:
    """Add the route to the server."""
    web_app = server_app.web_app
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    web_app.add_handlers(".*$", [(route, SharedDriverHandler)])

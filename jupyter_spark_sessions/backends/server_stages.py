"""The stages of a Spark Connect server's operations, read from the server's Spark UI
REST API (``/api/v1/applications/<id>/stages``) with the UI's secret: the same figures
the classic context's ``jss.StageFigures`` listener reports, in its shape, so the board
shows a Connect session's stage rows, slot chart and findings the way it shows a
classic one's.

The board names which stages to read: those of the session's own operations (the
client's progress reports carry their stage ids, which is how a stage is credited to
its session and cell). Per read, one request lists the server's active stages with
their running tasks (one per busy slot, whatever the stage's size); a stage's task
duration quantiles are asked at most every few seconds while it runs, and once when it
ended; an ended stage read that way is not asked again. What reaches the kernel is
bounded by the slots and the stages, never by the number of tasks.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from .local_master import UI_SECRET_HEADER

log = logging.getLogger(__name__)

#: The task duration quantiles asked: the median, the slowest, and enough of the top to
#: count the tasks near the slowest (``slow_tasks``).
QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0)
#: At most one read of the server per this many seconds (the board polls 4 times a
#: second while jobs run; the server's UI is another process's to answer).
READ_SECONDS = 1.0
#: A running stage's quantiles at most this often (computed by the server over its tasks).
SUMMARY_SECONDS = 5.0
#: The reads may take this share of one of the server's cores at most: after a read
#: that took the server d seconds, the next waits at least d / READ_SHARE (unless a
#: stage is new or ended). On a 20,000-task stage a read of the active stages took
#: 76 ms and a task summary 345 ms: read every 1 and 5 s, they cost that job ~15%.
READ_SHARE = 0.04
#: The executors' slots at most this often.
EXECUTORS_SECONDS = 5.0
#: A request that takes longer is given up (the view keeps what it had).
TIMEOUT_SECONDS = 2.0
#: Stage figures kept (the latest read), as the classic feed keeps.
MAX_STAGES = 2000
#: Ended stages asked one by one per read at most (for their final figures): an
#: operation of thousands of stages costs a bounded number of requests a second.
MAX_SINGLE_READS = 20
#: An ended stage is asked again after these many seconds while the server's status
#: store does not have its end yet (its listener runs behind the operation's result on
#: a busy server: seen over a second), then no more (one that never ran stays pending).
RETRY_AFTER_SECONDS = (0.25, 0.5, 1.0, 1.5, 2.0)
MAX_TRIES = len(RETRY_AFTER_SECONDS) + 1

_ENDED = ("COMPLETE", "FAILED", "SKIPPED")


def epoch_ms(text: Any) -> int | None:
    """Epoch milliseconds of one of the REST API's dates (``2026-12-06T09:04:38.929GMT``)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None
    return int(when.timestamp() * 1000)


def slow_task_count(completed: int, quantiles: Mapping[float, float]) -> int:
    """How many of ``completed`` tasks took at least half as long as the slowest, from
    duration quantiles (an upper bound: Spark's quantile ``q`` is the task of index
    ``min(int(q * n), n - 1)`` in duration order)."""
    if completed <= 0 or not quantiles:
        return 0
    slowest = max(quantiles.values())
    slow = [q for q, v in quantiles.items() if v >= slowest / 2]
    if min(quantiles) in slow:  # the lowest asked is slow too: all of them may be
        return completed
    return completed - min(min(int(q * completed), completed - 1) for q in slow)


def figures_of(
    stage: Mapping[str, Any],
    running: Mapping[str, int],
    summary: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One REST ``StageData`` as a ``jss.StageFigures`` entry (``board/stage_figures``):
    ``running`` its running tasks per executor, ``summary`` its ``taskSummary``
    (``TaskMetricDistributions``; None while not asked yet). Its name is left empty: a
    Connect stage's is the server's text of the plan, not the user's line (the board
    names it after its operation's call site)."""
    data: dict[str, Any] = {
        "stageId": int(stage["stageId"]),
        "attemptId": int(stage.get("attemptId", 0)),
        "name": "",
        "status": str(stage.get("status", "ACTIVE")),
        "numTasks": int(stage.get("numTasks", 0)),
        "numActiveTasks": int(stage.get("numActiveTasks", 0)),
        "numCompleteTasks": int(stage.get("numCompleteTasks", 0)),
        "numFailedTasks": int(stage.get("numFailedTasks", 0)),
        "numKilledTasks": int(stage.get("numKilledTasks", 0)),
        "inputBytes": int(stage.get("inputBytes", 0)),
        "shuffleReadBytes": int(stage.get("shuffleReadBytes", 0)),
        "shuffleWriteBytes": int(stage.get("shuffleWriteBytes", 0)),
        "memoryBytesSpilled": int(stage.get("memoryBytesSpilled", 0)),
        "diskBytesSpilled": int(stage.get("diskBytesSpilled", 0)),
        "executorRunTime": int(stage.get("executorRunTime", 0)),
        "jvmGcTime": int(stage.get("jvmGcTime", 0)),
    }
    for field, key in (("submissionTime", "submissionTime"), ("completionTime", "completionTime")):
        ms = epoch_ms(stage.get(key))
        if ms is not None:
            data[field] = ms
    if stage.get("failureReason"):
        data["failureReason"] = str(stage["failureReason"]).strip()[:4000]
    tasks = dict(stage.get("tasks") or {}).values()
    failed_tasks = [t for t in tasks if t.get("status") == "FAILED"]
    if failed_tasks:
        first = min(failed_tasks, key=lambda t: int(t.get("taskId", 0)))
        data["firstTaskFailure"] = str(first.get("errorMessage", "")).strip()[:4000]
    durations = dict(summary or {}).get("duration")
    if durations:
        quantiles = dict(zip(QUANTILES, (float(v) for v in durations), strict=False))
        data["medianTaskMs"] = int(quantiles[0.5])
        data["maxTaskMs"] = int(quantiles[1.0])
        data["slowTasks"] = slow_task_count(data["numCompleteTasks"], quantiles)
    executors: dict[str, list[int]] = {}
    for executor, share in dict(stage.get("executorSummary") or {}).items():
        ended = sum(int(share.get(k, 0)) for k in ("succeededTasks", "failedTasks", "killedTasks"))
        executors[str(executor)] = [0, ended, int(share.get("taskTime", 0))]
    for executor, count in running.items():
        executors.setdefault(executor, [0, 0, 0])[0] = count
    data["executors"] = executors
    return data


def running_per_executor(stage: Mapping[str, Any]) -> dict[str, int]:
    """A stage's running tasks per executor, from its ``tasks`` (read with
    ``taskStatus=RUNNING``)."""
    counts: dict[str, int] = {}
    for task in dict(stage.get("tasks") or {}).values():
        if task.get("status") == "RUNNING":
            executor = str(task.get("executorId", ""))
            counts[executor] = counts.get(executor, 0) + 1
    return counts


class ServerStageReader:
    """Reads one Connect server's stages for the board (``base.StageSource``); used
    from the board's thread only. ``ui_url``: the server's Spark UI; ``secret``: what its
    ``UiSecretFilter`` wants ("" when the UI is not filtered)."""

    def __init__(self, ui_url: str, secret: str) -> None:
        parts = urlsplit(ui_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path.rstrip("/") + "/api/v1/applications"
        self._headers = {UI_SECRET_HEADER: secret} if secret else {}
        self._connection: http.client.HTTPConnection | None = None
        self._app = ""
        self._read_at = 0.0
        #: Seconds the last read's requests took (``READ_SHARE``), the last summary's.
        self._read_cost = 0.0
        self._summary_cost = 0.0
        self._executors_at = 0.0
        #: Stage id -> (latest attempt's figures, when its quantiles were asked, final).
        self._stages: dict[int, tuple[dict[str, Any], float, bool]] = {}
        self._figures: dict[int, dict[str, Any]] = {}
        self._slots: dict[str, int] = {}
        #: Running stages read at least once (a new one makes a read urgent).
        self._asked: set[int] = set()
        #: How many times each ended stage was asked for its final figures, and when
        #: it may be asked again.
        self._tries: dict[int, tuple[int, float]] = {}

    def refresh(self, running: Iterable[int], ended: Iterable[int] = ()) -> None:
        # Stages that ended are read at once (a cell's summary waits for them), again a
        # few times until the server's store has their end; the others from the active
        # list, at most every READ_SECONDS unless one is new.
        now = time.monotonic()
        ended_ids = {s for s in ended if not self._final(s) and self._due(s, now)}
        running_ids = {s for s in running if not self._final(s)} - set(ended)
        urgent = bool(ended_ids) or not running_ids <= self._asked
        gap = max(READ_SECONDS, self._read_cost / READ_SHARE)
        if not (running_ids or ended_ids) or (now - self._read_at < gap and not urgent):
            return
        self._read_at = now
        if len(self._asked) > 4 * MAX_STAGES:
            self._asked.clear()
            self._tries.clear()
        self._asked |= running_ids
        try:
            self._read(running_ids, ended_ids, now)
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError) as exc:
            log.debug("reading the Connect server's stages failed: %s", exc)
            self._close()  # the next read opens a new connection
        finally:
            self._read_cost = time.monotonic() - now

    def stage_figures(self) -> dict[int, dict[str, Any]]:
        return self._figures

    def executor_slots(self) -> dict[str, int]:
        return self._slots

    def _final(self, stage_id: int) -> bool:
        known = self._stages.get(stage_id)
        return (known is not None and known[2]) or self._tries.get(stage_id, (0,))[0] >= MAX_TRIES

    def _due(self, stage_id: int, now: float) -> bool:
        """Whether an ended stage may be asked for its end now."""
        return self._tries.get(stage_id, (0, now))[1] <= now

    def _read(self, running: set[int], ended: set[int], now: float) -> None:
        if not self._app:
            self._app = str(self._get("")[0]["id"])
        if now - self._executors_at >= EXECUTORS_SECONDS or not self._slots:
            self._executors_at = now
            executors = self._get(f"/{self._app}/executors")
            self._slots = {
                str(e["id"]): int(e.get("totalCores", 0))
                for e in executors
                if int(e.get("totalCores", 0)) > 0
            }
        if running:
            path = f"/{self._app}/stages?status=active&details=true&taskStatus=RUNNING"
            for stage in self._get(path):
                stage_id = int(stage["stageId"])
                if stage_id not in running:
                    continue  # another session's
                before = self._stages.get(stage_id)
                asked_at = before[1] if before is not None else float("-inf")
                due = now - asked_at >= max(SUMMARY_SECONDS, self._summary_cost / READ_SHARE)
                summary = self._summary(stage) if due else None
                self._keep(stage, summary, now if due else asked_at, False, before)
        for stage_id in sorted(ended)[:MAX_SINGLE_READS]:
            # Read with its quantiles and failed tasks (a few tries: the server's
            # status store may not have its end yet, or it never ran).
            tries = self._tries.get(stage_id, (0,))[0] + 1
            wait = RETRY_AFTER_SECONDS[min(tries, MAX_TRIES - 1) - 1]
            self._tries[stage_id] = (tries, now + wait)
            attempts = self._get(
                f"/{self._app}/stages/{stage_id}?details=true&taskStatus=FAILED"
                f"&withSummaries=true&quantiles={','.join(map(str, QUANTILES))}"
            )
            latest = max(attempts, key=lambda a: int(a.get("attemptId", 0)))
            if str(latest.get("status")) in _ENDED:
                self._keep(latest, latest.get("taskMetricsDistributions"), now, True, None)
        while len(self._figures) > MAX_STAGES:
            oldest = next(iter(self._figures))
            del self._figures[oldest]
            self._stages.pop(oldest, None)

    def _summary(self, stage: Mapping[str, Any]) -> Any:
        if int(stage.get("numCompleteTasks", 0)) == 0:
            return None
        quantiles = ",".join(map(str, QUANTILES))
        path = f"/{self._app}/stages/{stage['stageId']}/{stage.get('attemptId', 0)}"
        started = time.monotonic()
        try:
            return self._get(f"{path}/taskSummary?quantiles={quantiles}")
        finally:
            self._summary_cost = time.monotonic() - started

    def _keep(
        self,
        stage: Mapping[str, Any],
        summary: Any,
        summarised_at: float,
        final: bool,
        before: tuple[dict[str, Any], float, bool] | None,
    ) -> None:
        data = figures_of(stage, running_per_executor(stage), summary)
        if summary is None and before is not None:  # quantiles not asked this time
            for key in ("medianTaskMs", "maxTaskMs", "slowTasks"):
                if key in before[0]:
                    data[key] = before[0][key]
        stage_id = data["stageId"]
        if before is not None and before[0] == data:
            return  # unchanged: the same dict, so the board parses nothing
        self._stages[stage_id] = (data, summarised_at, final)
        self._figures.pop(stage_id, None)  # the latest changed go last
        self._figures[stage_id] = data

    def _get(self, path: str) -> Any:
        if self._connection is None:
            self._connection = http.client.HTTPConnection(
                self._host, self._port, timeout=TIMEOUT_SECONDS
            )
        self._connection.request("GET", self._prefix + path, headers=self._headers)
        response = self._connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise ValueError(f"HTTP {response.status} for {path}")
        return json.loads(body)

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


_READERS: dict[tuple[str, str], ServerStageReader] = {}
_lock = threading.Lock()


def reader_for(ui_url: str, secret: str) -> ServerStageReader:
    """The reader of the server whose UI is at ``ui_url`` (one per server, shared by
    its sessions: stage ids are the server's)."""
    with _lock:
        reader = _READERS.get((ui_url, secret))
        if reader is None:
            reader = _READERS[(ui_url, secret)] = ServerStageReader(ui_url, secret)
        return reader

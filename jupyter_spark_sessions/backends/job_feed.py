"""The classic context's job feed the board polls: Spark's status store read through
the project's ``jss.BoardReader`` (one JVM round trip per poll), with each job's session
told by Spark's own session tag.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import driver_jar

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger(__name__)


class JobStatusReader:
    """Reads Spark's job status store (``sc.statusStore()``, private: it has the job tags
    and task counts the public status tracker lacks) in one py4j round trip per poll:
    ``jss.BoardReader`` (java/jss/BoardReader.java) reads what the feed asks for and
    answers with one (compressed) JSON text. Read field by field from Python, a poll with 50 running
    jobs took over 200 round trips. Call it from one thread (py4j gives each Python
    thread its own connection; the first call on a thread pays for opening it)."""

    def __init__(self, sc: SparkContext) -> None:
        self._reader = driver_jar.instance(sc, "jss.BoardReader")
        # Ending killed tasks' workers at once uses Spark internals (KilledTaskWorkers.java).
        problem = self._reader.killedTaskWorkersProblem()
        if problem:
            log.warning("cancelled Python tasks keep Spark's timing (0-2 s): %s", problem)

    def read(
        self, asked: Iterable[int], from_job_id: int, limit: int, stages_since: int = -1
    ) -> dict[str, Any]:
        """``stopped``; ``total`` (jobs submitted so far: ids 0..total-1); ``running``
        (Spark's ``JobData`` of every running job); ``jobs`` (the ``JobData`` of the
        ``asked`` ids and of those from ``from_job_id`` up (negative: the last
        ``-from_job_id``) that are not running, at most ``limit``, the newest);
        ``missing`` (ids among those the store does not have); ``stages`` (task counts,
        ``SparkStageInfo``, of the running jobs' active stages). With ``stages_since``
        not negative, also ``stageFigures`` (``jss.StageFigures``: the stages changed
        after that sequence number), ``stageSequence`` and ``executors`` (id, slots)."""
        asked_csv = ",".join(map(str, sorted(asked)))
        text = self._reader.read(asked_csv, from_job_id, limit, stages_since)
        # gzip + base64: py4j holds a reply over 8 KiB ~40 ms (BoardReader.java).
        reply: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(text)))
        return reply


# How many ended jobs one poll fetches at most; older ones are skipped (a burst of
# thousands of tiny jobs between two polls must not stall the board).
_MAX_ENDED_PER_POLL = 200


# Stage figures a feed keeps (the latest changed); the driver keeps 1,000 ended ones.
_MAX_STAGE_FIGURES = 2000


# How many polls a job Spark counted may be missing from its status store before the
# board stops asking (it was evicted, or the listener bus dropped its events).
_MAX_MISSES = 40


_FEEDS: dict[str, ContextJobFeed] = {}


# Spark's tag on every SQL job of a session (``sessionJobTag``); the tags of
# ``SparkSession.addTag`` extend it with ``-thread-...`` and are not a session's.
_SESSION_TAG = re.compile(r"spark-session-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def _is_session_tag(tag: str) -> bool:
    return tag.startswith("spark-session-") and _SESSION_TAG.fullmatch(tag) is not None


class ContextJobFeed:
    """The jobs of one SparkContext, read for the board (``JobFeed``); one per context,
    used from the board's thread only (see ``JobStatusReader``)."""

    @classmethod
    def of(cls, sc: SparkContext) -> ContextJobFeed:
        """The feed of ``sc`` (made on first use; one context at a time in a process)."""
        feed = _FEEDS.get("current")
        if feed is None or feed._sc is not sc:
            feed = _FEEDS["current"] = cls(sc, JobStatusReader(sc))
        return feed

    def __init__(self, sc: SparkContext, reader: JobStatusReader) -> None:
        self._sc = sc
        self._reader = reader
        #: Jobs from before the first session are not ours; the last 50 may be.
        self._last_total = -50
        self._last_running: set[int] = set()
        #: Job ids Spark counted whose data its status store has not written yet
        #: (listener events arrive after submission), with how many polls missed them.
        self._unwritten: dict[int, int] = {}
        self._stages: list[dict[str, Any]] = []
        #: Stage id -> its latest attempt's figures; the sequence number they are from.
        self._figures: dict[int, dict[str, Any]] = {}
        self._figures_sequence = 0
        self._slots: dict[str, int] = {}

    def poll(self, also: Iterable[int]) -> list[dict[str, Any]]:
        asked = self._last_running | set(self._unwritten) | set(also)
        reply = self._reader.read(
            asked, self._last_total, _MAX_ENDED_PER_POLL, self._figures_sequence
        )
        if reply["stopped"]:
            self._stages = []
            return []
        self._take_figures(reply)
        total = int(reply["total"])
        running: list[dict[str, Any]] = reply["running"]
        fetched: list[dict[str, Any]] = reply["jobs"]
        first_new = self._last_total if self._last_total >= 0 else max(0, total + self._last_total)
        new = range(first_new, total)
        for data in fetched:
            self._unwritten.pop(int(data["jobId"]), None)
        for job_id in map(int, reply["missing"]):
            if job_id in new or job_id in self._unwritten:  # not written yet: ask again
                misses = self._unwritten.get(job_id, 0) + 1
                if misses < _MAX_MISSES:
                    self._unwritten[job_id] = misses
                else:  # evicted (spark.ui.retainedJobs), or never to come
                    self._unwritten.pop(job_id, None)
        # A job read one by one may still run (it started between the two reads):
        # read it again next time, as every running job.
        self._last_total = total
        self._last_running = {
            int(d["jobId"]) for d in running + fetched if d.get("status") == "RUNNING"
        }
        self._stages = reply["stages"]
        jobs = running + fetched
        for data in jobs:  # the session Spark ran it in (SQL jobs only)
            tags = data.get("jobTags", ())
            data["sparkSession"] = next((t for t in tags if _is_session_tag(t)), "")
        return jobs

    def running_stages(self, stage_ids: Iterable[int]) -> list[dict[str, Any]]:
        # Read with the jobs, in the same round trip.
        wanted = set(stage_ids)
        return [d for d in self._stages if int(d["stageId"]) in wanted]

    def stage_figures(self) -> dict[int, dict[str, Any]]:
        return self._figures

    def executor_slots(self) -> dict[str, int]:
        return self._slots

    def _take_figures(self, reply: dict[str, Any]) -> None:
        self._figures_sequence = int(reply.get("stageSequence", self._figures_sequence))
        self._slots = {str(e["id"]): int(e["slots"]) for e in reply.get("executors", ())}
        for data in reply.get("stageFigures", ()):
            stage, attempt = int(data["stageId"]), int(data.get("attemptId", 0))
            known = self._figures.get(stage)
            if known is not None and int(known.get("attemptId", 0)) > attempt:
                continue  # an older attempt's late news
            self._figures.pop(stage, None)  # the latest changed go last
            self._figures[stage] = data
        while len(self._figures) > _MAX_STAGE_FIGURES:
            del self._figures[next(iter(self._figures))]

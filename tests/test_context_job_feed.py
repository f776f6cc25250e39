"""The classic job feed against a status store that lags behind Spark's job counter, as
the real one does (listener events are written after the job is submitted)."""

from __future__ import annotations

from typing import Any

from jupyter_spark_sessions.backends.classic import ContextJobFeed


class LaggingStore:
    """``JobStatusReader``'s read, over jobs the test writes when it wants."""

    def __init__(self) -> None:
        self.total = 0
        self.written: dict[int, dict[str, Any]] = {}

    def read(
        self, asked: Any, from_job_id: int, limit: int, stages_since: int = -1
    ) -> dict[str, Any]:
        # What jss.BoardReader answers (tests/test_private_apis.py reads the real one).
        running = self.running_jobs()
        first = from_job_id if from_job_id >= 0 else max(0, self.total + from_job_id)
        running_ids = {d["jobId"] for d in running}
        wanted = sorted((set(asked) | set(range(first, self.total))) - running_ids)[-limit:]
        return {
            "stopped": False,
            "total": self.total,
            "running": running,
            "jobs": [dict(self.written[i]) for i in wanted if i in self.written],
            "missing": [i for i in wanted if i not in self.written],
            "stages": [],
        }

    def running_jobs(self) -> list[dict[str, Any]]:
        return [dict(d) for d in self.written.values() if d["status"] == "RUNNING"]

    def write(self, job_id: int, status: str) -> None:
        self.written[job_id] = {"jobId": job_id, "status": status, "jobTags": []}


def statuses(jobs: list[dict[str, Any]]) -> dict[int, str]:
    return {d["jobId"]: d["status"] for d in jobs}


def test_a_job_counted_before_the_store_has_it_is_read_once_it_does() -> None:
    store = LaggingStore()
    feed = ContextJobFeed(object(), store)  # type: ignore[arg-type]
    store.total = 1  # submitted: counted, not written yet
    assert feed.poll(()) == []
    store.write(0, "SUCCEEDED")  # a short job, written only once it ended
    assert statuses(feed.poll(())) == {0: "SUCCEEDED"}
    assert feed.poll(()) == []  # and not again


def test_a_job_read_running_one_by_one_is_read_again_until_it_ends() -> None:
    store = LaggingStore()
    feed = ContextJobFeed(object(), store)  # type: ignore[arg-type]
    store.total = 1
    real_running = store.running_jobs
    store.running_jobs = lambda: []  # type: ignore[method-assign]  # the list read first
    store.write(0, "RUNNING")  # ... and the job written between the two reads
    assert statuses(feed.poll(())) == {0: "RUNNING"}
    store.running_jobs = real_running  # type: ignore[method-assign]
    store.write(0, "SUCCEEDED")
    assert statuses(feed.poll(())) == {0: "SUCCEEDED"}

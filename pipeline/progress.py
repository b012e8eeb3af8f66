"""Spark's stage and task progress, written to a file while a job runs.

A maintenance job is one ``CALL`` of an Iceberg procedure, which runs as many Spark jobs (a
rewrite runs one per file group), each a few stages of tasks. Spark's log says none of it
with the console progress bar off, so a thread of the job's process polls
``SparkContext.statusTracker()`` (active jobs and stages; per stage ``numTasks``,
``numCompletedTasks``, ``numActiveTasks``, ``numFailedTasks``) about once a second and
replaces the job folder's ``progress.json`` with what it saw (ui/jobs.py reads it for every
session). The tracker reads Spark's status store, which exists with the web UI off.

Spark numbers its jobs 0, 1, 2... per context, and keeps the last ``spark.ui.retainedJobs``
(1,000) of them: each poll looks up the ids after the last one it knows until one is
missing, so jobs that started and ended between two polls are counted too (a job group, as
Iceberg's actions set, hides jobs from ``getJobIdsForGroup(None)``, not from ``getJobInfo``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

PROGRESS_ENV = "ICECORE_JOB_PROGRESS"
"""The file a job launched by the app writes its progress to (set by ui/jobs.py)."""

INTERVAL_S = 1.0

T = TypeVar("T")


class SparkProgress:
    """A thread that writes a Spark session's progress to ``path`` until stopped.

    Use as a context manager around the work; the file is written once more when it ends,
    so the last record holds every stage the work ran.
    """

    def __init__(self, spark: Any, path: Path, interval_s: float = INTERVAL_S) -> None:
        """Watch ``spark`` (a SparkSession); nothing starts before ``__enter__``."""
        self._tracker = spark.sparkContext.statusTracker()
        self._path = path
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="icecore-progress", daemon=True)
        self._started_ms = int(time.time() * 1000)
        self._first = self._next_job_id()
        self._next = self._first

    def __enter__(self) -> SparkProgress:
        """Start polling."""
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop polling and write the final record."""
        self._stop.set()
        self._thread.join(timeout=10)
        self.write(finished=True)

    def _next_job_id(self) -> int:
        """The id Spark gives its next job: one past every job it still knows of.

        Jobs run in a job group (Iceberg's actions set one) are not among
        ``getJobIdsForGroup(None)``, so the ids past the newest listed are walked too: a
        session that ran an action before would otherwise count that action's jobs as this
        job's.
        """
        known = [*self._tracker.getJobIdsForGroup(None), *self._tracker.getActiveJobsIds()]
        following = max(known, default=-1) + 1
        while self._tracker.getJobInfo(following) is not None:
            following += 1
        return following

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.write()
            except Exception:  # the gateway going away at the end: the final write says it
                if self._stop.is_set():
                    return

    def record(self) -> dict[str, Any]:
        """What Spark says now: every job since the start, its stages, and a summary line."""
        tracker = self._tracker
        while tracker.getJobInfo(self._next) is not None:
            self._next += 1
        active = set(tracker.getActiveStageIds())
        jobs: list[dict[str, Any]] = []
        for job_id in range(self._first, self._next):
            info = tracker.getJobInfo(job_id)
            if info is None:  # evicted (more than spark.ui.retainedJobs since)
                continue
            stages = []
            for stage_id in info.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is None:  # not submitted yet, skipped, or evicted
                    continue
                stages.append(
                    {
                        "stage_id": stage_id,
                        "name": stage.name,
                        "tasks": stage.numTasks,
                        "completed": stage.numCompletedTasks,
                        "active": stage.numActiveTasks,
                        "failed": stage.numFailedTasks,
                        "running": stage_id in active,
                    }
                )
            jobs.append(
                {
                    "job_id": job_id,
                    "status": str(info.status),
                    "stages_total": len(info.stageIds),
                    "stages": stages,
                }
            )
        return {
            "updated_ms": int(time.time() * 1000),
            "started_ms": self._started_ms,
            "jobs": jobs,
            "line": summary(jobs),
        }

    def write(self, *, finished: bool = False) -> None:
        """Replace the progress file with :meth:`record` (whole, so a reader never sees half)."""
        found = {**self.record(), "finished": finished}
        partial = self._path.with_name(f".{self._path.name}.tmp")
        partial.write_text(json.dumps(found))
        os.replace(partial, self._path)


def summary(jobs: list[dict[str, Any]]) -> str:
    """One line: the running Spark job's stage and tasks, and how many jobs are done.

    ``stage 2 of ~3`` counts the job's stages Spark planned (some may be skipped, hence
    the ``~``); tasks are those of its running stages.
    """
    if not jobs:
        return "Spark has started no job yet."
    done = sum(1 for j in jobs if j["status"] in ("SUCCEEDED", "FAILED"))
    tasks = sum(s["tasks"] for j in jobs for s in j["stages"])
    completed = sum(s["completed"] for j in jobs for s in j["stages"])
    running = [j for j in jobs if j["status"] == "RUNNING"]
    overall = f"{done:,} of {len(jobs):,} Spark jobs done, tasks {completed:,}/{tasks:,} overall"
    if not running:
        return overall
    job = running[-1]
    stages = [s for s in job["stages"] if s["running"]]
    finished = sum(1 for s in job["stages"] if not s["running"] and s["completed"] >= s["tasks"])
    now = (
        f"Spark job {job['job_id'] - jobs[0]['job_id'] + 1}: stage "
        f"{min(finished + 1, job['stages_total'])} of ~{job['stages_total']}, tasks "
        f"{sum(s['completed'] for s in stages):,}/{sum(s['tasks'] for s in stages):,} "
        f"({sum(s['active'] for s in stages):,} running)"
    )
    return f"{now}; {overall}"


def reported(spark: Any, work: Callable[[], T]) -> T:
    """Run ``work``, writing progress to ``ICECORE_JOB_PROGRESS`` if the app asked for it."""
    target = os.environ.get(PROGRESS_ENV, "").strip()
    if not target:
        return work()
    with SparkProgress(spark, Path(target)):
        return work()

"""Jobs launched from the app: status from the job folder, and no zombie left behind.

A job is ``python -m MODULE`` behind an ``sh`` that writes its exit status; the ``sh`` is the
app's child, and a child nobody waits for stays a zombie (state Z in ``/proc``) until the app
exits. These launch a real job (``tests.ui.quick_job``, which ends at once) through
:func:`ui.jobs.launch` and read ``/proc`` for zombies, without psutil.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ui import jobs


def _zombie_children() -> list[int]:
    """Pids of this process's children that have ended but were never waited for."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after it.
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if state == "Z" and int(ppid) == me:
            found.append(int(entry.name))
    return found


def _finished(job_id: str, timeout_s: float = 60.0) -> jobs.JobStatus:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = jobs.status(job_id)
        if found.state is not jobs.State.RUNNING:
            return found
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still running after {timeout_s} s")


def _no_zombie(pid: int, timeout_s: float = 5.0) -> bool:
    """Whether ``pid`` is not (or stops being, within the timeout) a zombie child of ours."""
    deadline = time.monotonic() + timeout_s
    while pid in _zombie_children():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(autouse=True)
def _jobs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(jobs.JOBS_ENV, str(tmp_path))
    return tmp_path


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("exit_status", [0, 3])
def test_finished_jobs_leave_no_zombie(exit_status: int) -> None:
    job_ids = [
        jobs.launch([str(exit_status)], module="tests.ui.quick_job", table="t") for _ in range(3)
    ]
    for job_id in job_ids:
        found = _finished(job_id)
        expected = jobs.State.SUCCEEDED if exit_status == 0 else jobs.State.FAILED
        assert found.state is expected, found
        pid = int((jobs.jobs_dir() / job_id / "pid").read_text())
        assert _no_zombie(pid), f"the job's sh (pid {pid}) is left a zombie of the app"
    if exit_status == 0:
        assert found.result == {"done": True, "argv": ["0"]}
    else:
        assert found.error == "The quick job failed with status 3 as asked."
    assert _zombie_children() == []


def test_a_reaped_job_without_a_status_file_reads_as_lost(tmp_path: Path) -> None:
    # The folder is the source of truth: once the sh is reaped, a missing rc means lost.
    job_id = jobs.launch(["0"], module="tests.ui.quick_job")
    found = _finished(job_id)
    assert found.state is jobs.State.SUCCEEDED
    (tmp_path / job_id / "rc").unlink()
    assert _no_zombie(int((tmp_path / job_id / "pid").read_text()))
    assert jobs.status(job_id).state is jobs.State.LOST

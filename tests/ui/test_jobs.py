"""Jobs launched from the app: status from the job folder, and no zombie left behind.

A job is ``python -m MODULE`` behind an ``sh`` that writes its exit status; the ``sh`` is the
app's child, and a child nobody waits for stays a zombie (state Z in ``/proc``) until the app
exits. These launch a real job (``tests.ui.quick_job``, which ends at once) through
:func:`ui.jobs.launch` and read ``/proc`` for zombies, without psutil.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icecore.errors import IcecoreError
from ui import jobs

REPO = Path(__file__).resolve().parents[2]


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


def _wait_running(job_id: str, timeout_s: float = 30.0) -> None:
    """Until the job's Python has started (its first log line), so a signal finds it."""
    deadline = time.monotonic() + timeout_s
    while "sleeping" not in "".join(jobs.status(job_id).log_tail):
        assert time.monotonic() < deadline, f"job {job_id} never started"
        time.sleep(0.05)


def test_a_second_start_on_the_same_table_is_refused_until_the_first_ends() -> None:
    first = jobs.launch(["0", "60"], module="tests.ui.quick_job", one_per_table=True, table="c::t")
    try:
        with pytest.raises(jobs.JobRunning) as refused:
            jobs.launch(["0"], module="tests.ui.quick_job", one_per_table=True, table="c::t")
        assert first in str(refused.value) and "c::t" in str(refused.value)
        assert str(refused.value).count(".") >= 1 and "\n" not in str(refused.value)
        # Another table is free, and a job launched without the lock is not held back.
        other = jobs.launch(["0"], module="tests.ui.quick_job", one_per_table=True, table="c::u")
        assert _finished(other).state is jobs.State.SUCCEEDED
    finally:
        jobs.cancel(first)
    assert _finished(first).state is jobs.State.CANCELLED
    # The first job's lock is stale now: the next start takes it over.
    again = jobs.launch(["0"], module="tests.ui.quick_job", one_per_table=True, table="c::t")
    assert _finished(again).state is jobs.State.SUCCEEDED


_RACER = """
import os, sys, time
from pathlib import Path
from ui import jobs
go = Path(sys.argv[1])
while not go.exists():  # all racers start together
    time.sleep(0.005)
try:
    job = jobs.launch(["0", "30"], module="tests.ui.quick_job", one_per_table=True, table="c::race")
    print(job)
except jobs.JobRunning:
    print("refused")
"""
"""One process's attempt to start a job on ``c::race`` once the go file exists."""


@pytest.mark.slow
def test_starts_racing_from_several_processes_leave_exactly_one_job(tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = {**os.environ, jobs.JOBS_ENV: str(tmp_path)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(go)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    time.sleep(0.5)
    go.touch()
    outcomes = []
    for racer in racers:
        out, err = racer.communicate(timeout=180)
        assert racer.returncode == 0, err
        outcomes.append(out.strip().splitlines()[-1])
    started = [o for o in outcomes if o != "refused"]
    assert len(started) == 1, outcomes
    assert [j.job_id for j in jobs.table_jobs("c::race")] == started
    jobs.cancel(started[0])
    assert _finished(started[0]).state is jobs.State.CANCELLED


def test_a_lock_whose_process_is_gone_is_taken_over(tmp_path: Path) -> None:
    job_id = jobs.launch(["0", "60"], module="tests.ui.quick_job", one_per_table=True, table="c::t")
    _wait_running(job_id)
    pid = int((tmp_path / job_id / "pid").read_text())
    os.killpg(pid, signal.SIGKILL)  # the machine's OOM killer, not a cancel: no status left
    assert _finished(job_id).state is jobs.State.LOST
    taken = jobs.launch(["0"], module="tests.ui.quick_job", one_per_table=True, table="c::t")
    assert _finished(taken).state is jobs.State.SUCCEEDED


@pytest.mark.slow
def test_every_process_lists_a_tables_jobs_running_first_and_cancels_them() -> None:
    done = jobs.launch(["0"], module="tests.ui.quick_job", table="c::t", job="rewrite_manifests")
    _finished(done)
    failed = jobs.launch(["3"], module="tests.ui.quick_job", table="c::t", job="expire_snapshots")
    _finished(failed)
    running = jobs.launch(
        ["0", "60"],
        module="tests.ui.quick_job",
        one_per_table=True,
        table="c::t",
        job="rewrite_data_files",
    )
    jobs.launch(["0"], module="tests.ui.quick_job", table="c::other")
    # Another process (a second server, a colleague's session) reads the same folder.
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ui import jobs; "
            "print([(j.job_id, str(j.state)) for j in jobs.table_jobs('c::t')])",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
    ).stdout.strip()
    assert listed == str([(running, "running"), (failed, "failed"), (done, "succeeded")])
    _wait_running(running)
    subprocess.run(
        [sys.executable, "-c", f"from ui import jobs; jobs.cancel({running!r}, by='a colleague')"],
        check=True,
        env=os.environ,
    )
    found = _finished(running)
    assert found.state is jobs.State.CANCELLED
    assert found.error is not None and found.error.startswith("Cancelled from a colleague at ")
    assert [j.state for j in jobs.table_jobs("c::t")] == [
        jobs.State.CANCELLED,
        jobs.State.FAILED,
        jobs.State.SUCCEEDED,
    ]


@pytest.mark.slow
def test_a_cancelled_job_runs_until_its_last_process_ends() -> None:
    # A process of the job's group that outlives its sh (as Spark's JVM shutting down does)
    # keeps the job running, and its table locked, until it ends.
    job_id = jobs.launch(
        ["0", "60", "4"], module="tests.ui.quick_job", one_per_table=True, table="c::t"
    )
    _wait_running(job_id)
    jobs.cancel(job_id)
    time.sleep(0.5)
    assert jobs.status(job_id).state is jobs.State.RUNNING
    with pytest.raises(jobs.JobRunning):
        jobs.launch(["0"], module="tests.ui.quick_job", one_per_table=True, table="c::t")
    assert _finished(job_id).state is jobs.State.CANCELLED


@pytest.mark.parametrize("job_id", ["../x", "/tmp", "..", "", "20260101T000000-abcdef0/../x"])
def test_a_cancel_of_what_is_not_a_job_id_touches_nothing_outside_the_jobs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job_id: str
) -> None:
    # A folder beside the jobs folder that looks like a job: a cancel must not write there.
    jobs_folder = tmp_path / "jobs"
    jobs_folder.mkdir()
    monkeypatch.setenv(jobs.JOBS_ENV, str(jobs_folder))
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "job.json").write_text('{"table": "c::t"}')
    (outside / "pid").write_text(str(os.getpid()))
    with pytest.raises(IcecoreError, match="no job"):
        jobs.cancel(job_id)
    assert sorted(p.name for p in outside.iterdir()) == ["job.json", "pid"]
    with pytest.raises(ValueError, match="not a job id"):
        jobs.status(job_id)


def test_a_cancel_names_the_table_and_leaves_ended_jobs_alone(tmp_path: Path) -> None:
    running = jobs.launch(["0", "60"], module="tests.ui.quick_job", table="c::t")
    _wait_running(running)
    with pytest.raises(IcecoreError, match="not a job of table c::other"):
        jobs.cancel(running, table="c::other")
    assert jobs.status(running).state is jobs.State.RUNNING
    jobs.cancel(running, table="c::t")
    assert _finished(running).state is jobs.State.CANCELLED
    done = jobs.launch(["0"], module="tests.ui.quick_job", table="c::t")
    assert _finished(done).state is jobs.State.SUCCEEDED
    jobs.cancel(done)  # over: its pid is never signalled, nor is it marked cancelled
    assert jobs.status(done).state is jobs.State.SUCCEEDED

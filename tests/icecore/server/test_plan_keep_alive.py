"""A plan's submitted record kept alive while the plan is made (icecore.server.planning).

The plan TTL runs from when a plan is answered: a plan taking longer than the TTL must not
be found gone when it is made (answered "cancelled"), and a cancelled one must stay gone.
Both stores the server keeps plans in are checked: in memory and in SQLite (the SQL store's
UPDATE is the one PostgreSQL runs too).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from icecore.catalog.plan_store import (
    MemoryPlanStore,
    PlanRecord,
    PlanStore,
    _sqlite_file_store,
    plan_key,
)
from icecore.server.planning import keep_alive

TTL = 3.0
"""The plan TTL of these tests: a beat every second; a record lapses only if its keep-alive
thread is starved for three (no test waits for a fixed time: each waits for a condition)."""
WAIT_S = 60.0


def _until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition`` (up to :data:`WAIT_S`)."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.05)


class _Counting:
    """A store whose successful touches are counted."""

    def __init__(self, store: PlanStore) -> None:
        self.store = store
        self.touched = 0

    def touch(self, key: str, expires_at: float) -> bool:
        done = self.store.touch(key, expires_at)
        self.touched += done
        return done


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PlanStore]:
    if request.param == "memory":
        yield MemoryPlanStore()
    else:
        yield _sqlite_file_store(tmp_path / "plans.db", "cat")


def _submit(store: PlanStore, plan_id: str, ttl: float = TTL) -> str:
    key = plan_key(plan_id)
    payload = {"status": "submitted", "plan-id": plan_id}
    store.put([PlanRecord(key, plan_id, "ns.t", "alice", time.time() + ttl, payload)])
    return key


def test_touch_moves_a_live_record_and_never_revives(store: PlanStore) -> None:
    key = _submit(store, "p1")
    later = time.time() + 100
    assert store.touch(key, later)
    found = store.get(key)
    assert found is not None and found.expires_at == pytest.approx(later)
    assert not store.touch(plan_key("never"), later)
    assert store.get(plan_key("never")) is None
    store.drop_plan("p1")
    assert not store.touch(key, later)
    assert store.get(key) is None
    gone = _submit(store, "p2", ttl=0.05)
    _until(lambda: store.get(gone) is None)
    assert not store.touch(gone, later)  # expired: not brought back
    assert store.get(gone) is None


def test_a_plan_outliving_its_ttl_is_kept_while_made(store: PlanStore) -> None:
    key = _submit(store, "slow")
    submitted = store.get(key)
    assert submitted is not None
    counting = _Counting(store)
    made = threading.Event()
    beat = threading.Thread(target=keep_alive, args=(counting, key, made, TTL), daemon=True)
    beat.start()

    # Past the TTL it was submitted with, other puts purging expired records meanwhile.
    def purged_past_ttl() -> bool:
        _submit(store, f"other-{time.time()}")
        return time.time() > submitted.expires_at

    _until(purged_past_ttl)
    _until(lambda: counting.touched >= 4)
    found = store.get(key)
    assert found is not None and found.expires_at > submitted.expires_at
    made.set()
    beat.join(timeout=WAIT_S)
    assert not beat.is_alive()
    _until(lambda: store.get(key) is None)  # made: no more beats, so the TTL runs out


def test_a_cancelled_plan_stays_cancelled(store: PlanStore) -> None:
    key = _submit(store, "cancel-me")
    counting = _Counting(store)
    made = threading.Event()
    beat = threading.Thread(target=keep_alive, args=(counting, key, made, TTL), daemon=True)
    beat.start()
    _until(lambda: counting.touched >= 1)
    store.drop_plan("cancel-me")
    beat.join(timeout=WAIT_S)
    assert not beat.is_alive()  # stopped at its next beat, without being told
    assert store.get(key) is None
    made.set()


def test_a_plan_made_after_its_cancel_is_not_kept(store: PlanStore) -> None:
    """The made plan replaces its submitted record only while that record lives."""
    key = _submit(store, "made")
    done = {"status": "completed", "plan-id": "made"}
    later = time.time() + 100
    assert store.replace_live(PlanRecord(key, "made", "ns.t", "alice", later, done))
    found = store.get(key)
    assert found is not None and found.payload == done
    assert found.expires_at == pytest.approx(later)
    cancelled = _submit(store, "cancelled")
    store.drop_plan("cancelled")
    record = PlanRecord(cancelled, "cancelled", "ns.t", "alice", later, done)
    assert not store.replace_live(record)
    assert store.get(cancelled) is None
    expired = _submit(store, "expired", ttl=0.05)
    _until(lambda: store.get(expired) is None)
    assert not store.replace_live(PlanRecord(expired, "expired", "ns.t", "alice", later, done))
    assert store.get(expired) is None

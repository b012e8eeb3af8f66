"""Each alert sent once by runs at once over a SQL catalog, and a failed send said by the exit code.

:mod:`icecore.catalog.alert_store`: a run claims an alert (``INSERT ... ON CONFLICT DO
NOTHING``) before sending it, only the winner sends, and a send that failed releases the
claim. ``icecore alerts`` exits 3 when an alert could not be delivered, its JSON printed.
Real SQLite and PostgreSQL (``pg_server``), a real listener on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from icecore.alert_rules import run_alerts
from icecore.alerts import parse_alerts
from icecore.catalog import SqlCatalog, TableIdentifier, load_catalog
from icecore.catalog.alert_store import ALERTS_TABLE, SentAlert, SqlAlertStore, now_ms
from icecore.catalog.sql import SqlCatalogAdmin
from icecore.catalog_health import catalog_health
from icecore.cli import ALERTS_UNDELIVERED_EXIT, main
from tests.icecore.test_alerts import FAST, SMALL, Listener, _config, _write_small


def _small_catalog(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQL catalog (``backend``) holding only ``db.small``, whose score is lowered; its URI."""
    from pyiceberg.catalog.sql import SqlCatalog as PeerCatalog

    if backend == "sqlite":
        uri = f"sqlite:///{tmp_path / 'cat.db'}"
        _write_small(PeerCatalog("peer", uri=uri, warehouse=str(tmp_path)))
        return uri
    from tests.pg_server import with_catalog_tables

    pg = request.getfixturevalue("pg_server")
    uri = with_catalog_tables(pg.create_database(f"al_{uuid.uuid4().hex[:8]}"))
    scratch = tmp_path / "peer"
    scratch.mkdir()
    peer = PeerCatalog("peer", uri=f"sqlite:///{scratch / 'p.db'}", warehouse=str(scratch))
    metadata = _write_small(peer)
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog)
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    admin.register_table(TableIdentifier(("db",), "small"), str(metadata))
    return uri


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def _store(uri: str) -> SqlAlertStore:
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog)
    return SqlAlertStore(catalog)


def _second_while_first_sends(
    listener: Listener, first: Callable[[], None], second: Callable[[], None]
) -> None:
    """Start ``first``; once its POST has come (held), run ``second`` until it ends or POSTs.

    ``second`` runs on a thread; a second POST means both runs send (the race). Then the
    held POST is answered.
    """
    ended = threading.Event()

    def run_second() -> None:
        try:
            second()
        finally:
            ended.set()
            with listener.changed:
                listener.changed.notify_all()

    listener.hold.clear()  # the first run's POST waits: it has read the keys, not recorded
    try:
        first()
        assert listener.wait("attempts", 1, timeout=120)
        threading.Thread(target=run_second, daemon=True).start()
        with listener.changed:
            assert listener.changed.wait_for(lambda: listener.attempts >= 2 or ended.is_set(), 120)
    finally:
        listener.hold.set()


def _alerting(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, int]:
    """The catalog of :func:`_small_catalog` and a threshold its one table is below."""
    uri = _small_catalog(backend, request, tmp_path)
    (row,) = catalog_health(load_catalog(uri))
    return uri, int(row["score"]) + 1


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_runs_at_once_over_a_sql_catalog_send_each_alert_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, listener: Listener
) -> None:
    uri, below = _alerting(backend, request, tmp_path)
    config = parse_alerts({"webhook": listener.url, **FAST, "score_below": below})
    outs: dict[str, dict[str, Any]] = {}

    def run(name: str) -> None:
        # Each run its own catalog object: its own connections, as a second process has.
        outs[name] = run_alerts(load_catalog(uri), config, catalog_name=uri)

    first = threading.Thread(target=run, args=("first",))
    _second_while_first_sends(listener, first.start, lambda: run("second"))
    first.join(60)
    assert listener.attempts == 1 and len(listener.bodies) == 1
    assert [len(outs[n]["sent"]) for n in ("first", "second")] == [1, 0]
    assert outs["second"]["already_sent"] == 1 and outs["second"]["failed"] == []
    assert listener.bodies[0]["table"] == SMALL
    assert [s.payload["table"] for s in _store(uri).recent(5)] == [SMALL]


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[SqlAlertStore, SqlAlertStore]:
    """Two stores over one catalog, as two runs (processes, hosts) have."""
    uri = _small_catalog(request.param, request, tmp_path)
    return _store(uri), _store(uri)


def test_a_claim_is_won_once_and_a_released_one_can_be_won_again(
    two_stores: tuple[SqlAlertStore, SqlAlertStore],
) -> None:
    one, two = two_stores
    later = now_ms() + 600_000  # claims that do not lapse during the test
    alert = SentAlert("db.small|score_below|below50:40", 7, {"event": "score_below"})
    assert one.claim(alert, later) is True
    assert two.claim(SentAlert(alert.key, 8, alert.payload), later) is False
    assert two.keys() == {alert.key}  # a claim being sent counts as sent for other runs
    assert two.recent(5) == []  # but it is not shown as sent
    one.settle(alert, delivered=False)  # the hook failed: released
    assert two.keys() == set()
    again = SentAlert(alert.key, 9, alert.payload)
    assert two.claim(again, later) is True and one.claim(alert, later) is False
    two.settle(again, delivered=True)
    assert [s.time_ms for s in one.recent(5)] == [9]
    assert one.claim(SentAlert(alert.key, 10, alert.payload), 0) is False  # sent: never lapses


def test_the_claim_of_a_run_that_died_mid_send_lapses_and_is_taken_over(
    two_stores: tuple[SqlAlertStore, SqlAlertStore],
) -> None:
    dead, live = two_stores
    alert = SentAlert("db.small|regression|avg@1", 7, {"event": "regression"})
    assert dead.claim(alert, now_ms() - 1) is True  # its run died; the claim has lapsed
    assert live.keys() == set()  # not counted as sent
    taken = SentAlert(alert.key, 8, alert.payload)
    assert live.claim(taken, now_ms() + 600_000) is True
    assert dead.claim(alert, now_ms() + 600_000) is False  # taken, not lapsed: one winner
    dead.settle(alert, delivered=True)  # the dead run's settle touches only its own claim
    assert live.recent(5) == [] and live.keys() == {alert.key}
    live.settle(taken, delivered=True)
    assert [s.time_ms for s in live.recent(5)] == [8]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_table_from_before_the_unique_key_is_brought_up_to_date(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    uri = _small_catalog(backend, request, tmp_path)
    store = _store(uri)
    cat = store.catalog
    with closing(cat._connect()) as conn:  # the table as the first release made it
        conn.execute(
            f"CREATE TABLE {ALERTS_TABLE} (seq {cat.serial_key}, sql_catalog VARCHAR(255) NOT "
            "NULL, alert_key TEXT NOT NULL, sent_ms BIGINT NOT NULL, payload TEXT NOT NULL)"
        )
        for ms in (1, 2):  # two runs at once sent one alert twice
            conn.execute(
                f"INSERT INTO {ALERTS_TABLE} (sql_catalog, alert_key, sent_ms, payload) "
                f"VALUES ({cat.placeholder}, 'k', {cat.placeholder}, '{{}}')",
                (cat.catalog_name, ms),
            )
    assert store.recent(5) and store.keys() == {"k"}  # read before the upgrade: all sent
    later = now_ms() + 600_000
    assert store.claim(SentAlert("k", 3, {}), later) is False
    assert store.claim(SentAlert("j", 4, {}), later) is True
    store.settle(SentAlert("j", 4, {}), delivered=True)
    assert sorted((s.key, s.time_ms) for s in store.recent(5)) == [("j", 4), ("k", 1)]
    assert "pending_until" in cat._column_names(ALERTS_TABLE)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("hook", ["answers 500", "refuses connections"])
def test_the_cli_exits_3_when_an_alert_was_not_delivered(
    hook: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    listener: Listener,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri, below = _alerting("sqlite", request, tmp_path)
    if hook == "answers 500":
        listener.script = [500] * 10
        url = listener.url
    else:
        url = f"http://127.0.0.1:{_closed_port()}/hook"
    settings = {**FAST, "retries": 2, "score_below": below}
    monkeypatch.setenv("ICECORE_CONFIG", str(_config(tmp_path, url, **settings)))
    assert main(["alerts", uri]) == ALERTS_UNDELIVERED_EXIT
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert printed["sent"] == [] and [e["table"] for e in printed["failed"]] == [SMALL]
    assert "could not be delivered" in err and "/hook" not in out + err
    if hook == "answers 500":
        assert listener.attempts == 3  # the first try and its two retries
    assert _store(uri).keys() == set()  # not remembered: the next run sends it
    # Delivered: exit 0.
    listener.script = []
    monkeypatch.setenv("ICECORE_CONFIG", str(_config(tmp_path, listener.url, **settings)))
    assert main(["alerts", uri]) == 0
    assert [e["table"] for e in json.loads(capsys.readouterr().out)["sent"]] == [SMALL]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_alerts_processes_at_once_over_a_sql_catalog_post_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, listener: Listener
) -> None:
    uri, below = _alerting(backend, request, tmp_path)
    config = _config(tmp_path, listener.url, **FAST, score_below=below)
    env = {**os.environ, "ICECORE_CONFIG": str(config)}
    command = [sys.executable, "-m", "icecore", "alerts", uri]
    runs: list[subprocess.Popen[str]] = []

    def start() -> None:
        runs.append(
            subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
        )

    def second() -> None:
        start()
        runs[-1].wait()

    _second_while_first_sends(listener, start, second)
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in runs]
    first, second_run = runs
    assert [p.returncode for p in (first, second_run)] == [0, 0]
    assert [len(o["sent"]) for o in outs] == [1, 0] and outs[1]["already_sent"] == 1
    assert listener.attempts == 1 and len(listener.bodies) == 1


def test_a_read_only_sql_catalog_claims_every_alert_and_records_none(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    uri = _small_catalog("sqlite", request, tmp_path)
    writable = _store(uri)
    reader = SqlAlertStore(SqlCatalog(writable.catalog.path, read_only=True))
    alert = SentAlert("k", 1, {"event": "score_below"})
    assert reader.writable is False
    assert reader.claim(alert, now_ms() + 600_000) is True  # every run sends: nothing kept
    reader.settle(alert, delivered=True)
    assert reader.add(alert) is False
    assert reader.claim(alert, now_ms() + 600_000) is True
    assert writable.keys() == set() and writable.recent(5) == []


@pytest.mark.slow
def test_a_run_killed_after_its_claim_neither_sends_twice_nor_suppresses_the_alert(
    request: pytest.FixtureRequest, tmp_path: Path, listener: Listener
) -> None:
    from icecore.failpoints import CRASH_EXIT_CODE, ENV

    uri, below = _alerting("sqlite", request, tmp_path)
    config = _config(tmp_path, listener.url, **FAST, score_below=below)
    env = {**os.environ, "ICECORE_CONFIG": str(config), ENV: "alert-claimed=crash"}
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "alerts", uri], env=env, capture_output=True, check=False
    )
    assert done.returncode == CRASH_EXIT_CODE and listener.attempts == 0
    store = _store(uri)
    (key,) = store.keys()  # the dead run's claim: within its bound, taken as being sent
    assert store.recent(5) == []
    settings = parse_alerts({"webhook": listener.url, **FAST, "score_below": below})
    assert run_alerts(load_catalog(uri), settings, catalog_name=uri)["sent"] == []
    assert listener.attempts == 0
    cat = store.catalog
    with closing(cat._connect()) as conn:  # the claim's bound passes (as time would)
        conn.execute(f"UPDATE {ALERTS_TABLE} SET pending_until = ?", (now_ms() - 1,))
    out = run_alerts(load_catalog(uri), settings, catalog_name=uri)
    assert [e["table"] for e in out["sent"]] == [SMALL] and listener.wait("bodies", 1)
    assert [s.key for s in store.recent(5)] == [key] and listener.attempts == 1

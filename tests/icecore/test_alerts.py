"""Webhook alerts (issue 34 deliver 6): a real HTTP listener on 127.0.0.1 receives them.

The listener is the standard library's ``http.server`` in a thread, answering what each test
scripts (200, 500, a held answer); nothing of the sender is mocked. The tables are the small
health warehouse (:mod:`tests.icecore.health_tables`); their scores come from
:func:`icecore.catalog_health.catalog_health`, the input the alerts judge, never from the
alerts themselves.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from icecore import alerts
from icecore.alert_rules import run_alerts
from icecore.alerts import (
    AlertConfig,
    AlertSender,
    alert_config,
    parse_alerts,
    payload,
    post,
    send_alert,
)
from icecore.catalog import load_catalog
from icecore.catalog.alert_store import ALERTS_FILE, alert_store_for
from icecore.catalog_health import catalog_health
from icecore.config import load_config
from icecore.errors import ValidationError
from tests.icecore.health_tables import write_health_warehouse
from tests.ui.rows_table import NAME


class Listener:
    """An HTTP server on 127.0.0.1 recording each POST's JSON and answering ``script``.

    ``script`` holds the statuses of the first answers (then 200); ``hold`` makes every
    answer wait until it is set.
    """

    def __init__(self, script: list[int | tuple[int, str]] | None = None) -> None:
        self.script = list(script or [])
        self.bodies: list[dict[str, Any]] = []
        self.attempts = 0
        self.hold = threading.Event()
        self.hold.set()
        self.changed = threading.Condition()
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with listener.changed:
                    listener.attempts += 1
                    answer = listener.script.pop(0) if listener.script else 200
                    listener.changed.notify_all()
                status, retry_after = answer if isinstance(answer, tuple) else (answer, None)
                listener.hold.wait(30)
                if status == 200:  # recorded before the answer: the sender then knows it
                    with listener.changed:
                        listener.bodies.append(json.loads(body))
                        listener.changed.notify_all()
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook/SECRET-PATH"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, what: str, count: int, timeout: float = 10.0) -> bool:
        """Wait until ``what`` (``bodies`` or ``attempts``) reaches ``count``."""
        with self.changed:
            return self.changed.wait_for(
                lambda: (len(self.bodies) if what == "bodies" else self.attempts) >= count,
                timeout,
            )

    def close(self) -> None:
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def _alerting_small(warehouse: Path) -> int:
    """A score threshold just above the SMALL table's score: it alerts about that table."""
    return 1 + next(
        r["score"] for r in catalog_health(load_catalog(str(warehouse))) if r["table"] == SMALL
    )


def _config(tmp_path: Path, url: str, **more: Any) -> Path:
    lines = ["[alerts]", f'webhook = "{url}"'] + [f"{k} = {v!r}" for k, v in more.items()]
    path = tmp_path / "icecore.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


FAST = {"backoff": 0.01, "timeout": 5.0, "max_seconds": 10.0}


def test_send_alert_posts_the_json_from_a_background_thread(
    listener: Listener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CONFIG", str(_config(tmp_path, listener.url, **FAST)))
    event = {
        "event": "job_failed",
        "table": "db.t",
        "catalog": "postgresql://icecore:hunter2@db.example/cat",
        "job": "rewrite_data_files",
        "error": "The Spark job failed.",
        "token": "hunter2",  # not an allowed key: never sent
    }
    assert send_alert(event) is True
    assert alerts.flush(10)
    assert listener.wait("bodies", 1)
    got = listener.bodies[0]
    assert (got["event"], got["table"], got["job"], got["error"]) == (
        "job_failed",
        "db.t",
        "rewrite_data_files",
        "The Spark job failed.",
    )
    assert got["time"] and "token" not in got
    assert "hunter2" not in json.dumps(got) and "db.example" in got["catalog"]


def test_no_webhook_or_a_bad_event_sends_nothing_and_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CONFIG", str(tmp_path / "absent.toml"))
    assert send_alert({"event": "job_failed", "table": "db.t"}) is False
    bad = tmp_path / "bad.toml"
    bad.write_text('[alerts]\nwebhook = "ftp://example.com/x"\n')
    monkeypatch.setenv("ICECORE_CONFIG", str(bad))
    assert send_alert({"event": "job_failed", "table": "db.t"}) is False
    with pytest.raises(ValidationError, match="http"):
        alert_config()
    with pytest.raises(ValidationError, match="must be one of"):
        payload({"event": "rm -rf", "table": "db.t"})


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"webhook": "https://u:p@hooks.example/x"}, "user:password"),
        ({"webhook": "file:///etc/passwd"}, "http"),
        ({"webhook": "https:///nohost"}, "host"),
        ({"webhook": "https://h.example", "timeout": -1}, "timeout"),
        ({"webhook": "https://h.example", "retires": 3}, "no setting"),
        ({"webhook": "https://h.example", "score_below": 101}, "score_below"),
    ],
)
def test_a_malformed_section_is_one_sentence_without_the_url(
    section: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        parse_alerts(section)
    assert "u:p" not in str(caught.value) and "passwd" not in str(caught.value)


def test_only_scheme_and_host_are_shown_and_the_url_may_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOK", "https://hooks.example:8443/services/T0/B0/SECRET")
    config = parse_alerts({"webhook-env": "HOOK"})
    assert config.webhook == "https://hooks.example:8443/services/T0/B0/SECRET"
    assert config.host == "https://hooks.example:8443"
    assert "SECRET" not in repr(config)


def test_500_twice_then_200_is_delivered_after_retries(tmp_path: Path) -> None:
    listener = Listener([500, 503])
    try:
        config = parse_alerts({"webhook": listener.url, **FAST})
        assert post(config, b'{"event": "job_failed"}') is True
        assert listener.attempts == 3 and listener.bodies == [{"event": "job_failed"}]
    finally:
        listener.close()


def test_a_4xx_is_not_retried_and_retries_are_bounded(tmp_path: Path) -> None:
    listener = Listener([400, 500, 500, 500])
    try:
        config = parse_alerts({"webhook": listener.url, **FAST, "retries": 1})
        assert post(config, b"{}") is False
        assert listener.attempts == 1  # 400: the hook refused it
        assert post(config, b"{}") is False
        assert listener.attempts == 3  # 500, then one retry (500), then no more
    finally:
        listener.close()


def test_retry_after_is_respected_within_the_bound(tmp_path: Path) -> None:
    listener = Listener([(429, "1")])
    try:
        config = parse_alerts({"webhook": listener.url, **FAST})
        started = time.monotonic()
        assert post(config, b"{}") is True and listener.attempts == 2
        assert time.monotonic() - started >= 1.0  # waited as asked, not the 0.01 s backoff
        listener.script = [(503, "3600")]
        assert post(config, b"{}") is False  # the wait asked for passes the bound: given up
        assert listener.attempts == 3  # no retry after it: not waited for
    finally:
        listener.close()


def _silent_socket() -> tuple[socket.socket, str]:
    """A TCP socket that accepts connections (the backlog) and never answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}/hook"


def test_a_silent_listener_never_blocks_the_caller_beyond_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, url = _silent_socket()
    try:
        monkeypatch.setenv(
            "ICECORE_CONFIG",
            str(_config(tmp_path, url, timeout=60.0, max_seconds=60.0, retries=0)),
        )
        # No clock: the POST cannot end before the socket is closed below, so a caller that
        # returns, and a flush that gives up, did not wait for it.
        assert send_alert({"event": "job_failed", "table": "db.t", "job": "expire"}) is True
        sender = alerts.sender_for(alert_config())
        assert sender.sent == 0 and sender.failed == 0  # still pending: not waited for
        assert alerts.flush(0.2) is False  # flush ends at its own timeout
        sock.close()  # the pending connection is reset: the sender fails it, the queue drains
        assert alerts.flush(60.0)
        assert sender.failed >= 1 and sender.sent == 0
    finally:
        sock.close()


def test_a_full_queue_drops_and_counts(listener: Listener) -> None:
    listener.hold.clear()
    sender = AlertSender(parse_alerts({"webhook": listener.url, **FAST}), queue_size=1)
    event = {"event": "job_failed", "table": "db.t", "job": "j"}
    assert sender.submit(event) is True
    assert listener.wait("attempts", 1)  # the thread holds the first; the queue is empty
    assert sender.submit(event) is True  # queued
    assert sender.submit(event) is False  # full: dropped
    assert sender.submit(event) is False
    assert sender.dropped == 2
    listener.hold.set()
    assert sender.flush(10)
    assert (sender.sent, len(listener.bodies)) == (2, 2)


SMALL = "db.small"
"""A table of five one-row appends: five small files, so its score is lowered."""


def _write_small(peer: Any, location: Path | None = None, name: str = SMALL) -> Path:
    """``name`` in the PyIceberg catalog ``peer``: five one-row appends; its metadata file."""
    import pyarrow as pa

    rows = pa.table({"id": pa.array([1], pa.int64())})
    if "db" not in {n[0] for n in peer.list_namespaces()}:
        peer.create_namespace("db")
    table = peer.create_table(
        name, schema=rows.schema, **({"location": str(location)} if location else {})
    )
    for _ in range(5):
        table.append(rows)
    return Path(peer.load_table(name).metadata_location.removeprefix("file://"))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """The health warehouse and ``db.small`` (Hadoop layout)."""
    from pyiceberg.catalog.sql import SqlCatalog as PeerCatalog

    root = write_health_warehouse(tmp_path)
    scratch = tmp_path / "small-peer"
    scratch.mkdir()
    peer = PeerCatalog("p", uri=f"sqlite:///{scratch / 'p.db'}", warehouse=str(scratch))
    folder = root / "db" / "small"
    current = _write_small(peer, folder)
    (folder / "metadata" / "v1.metadata.json").write_text(current.read_text())
    (folder / "metadata" / "version-hint.text").write_text("1")
    return root


def _set_property(table_folder: Path, key: str, value: str) -> None:
    """A new metadata version of a Hadoop-layout table with one more property."""
    meta = table_folder / "metadata"
    version = int((meta / "version-hint.text").read_text())
    obj = json.loads((meta / f"v{version}.metadata.json").read_text())
    obj.setdefault("properties", {})[key] = value
    (meta / f"v{version + 1}.metadata.json").write_text(json.dumps(obj))
    (meta / "version-hint.text").write_text(str(version + 1))


def test_a_table_below_its_threshold_alerts_once_across_runs(
    listener: Listener, warehouse: Path
) -> None:
    scores = {r["table"]: r["score"] for r in catalog_health(load_catalog(str(warehouse)))}
    small = scores[SMALL]
    assert small is not None and small < scores[NAME] == scores["db.empty"] == 100
    config = parse_alerts({"webhook": listener.url, **FAST, "score_below": small + 1})
    first = run_alerts(load_catalog(str(warehouse)), config, catalog_name=str(warehouse))
    assert [(e["event"], e["table"]) for e in first["sent"]] == [("score_below", SMALL)]
    sent = first["sent"][0]
    assert (sent["score"], sent["threshold"]) == (small, small + 1)
    assert "small_files" in {f["check"] for f in sent["factors"]}
    assert sent["factors"] and all(f["points"] > 0 for f in sent["factors"])
    assert listener.wait("bodies", 1) and listener.bodies[0] == sent
    assert (warehouse / ALERTS_FILE).is_file()
    assert "db.icecore-alerts" not in {
        r["table"] for r in catalog_health(load_catalog(str(warehouse)))
    }
    second = run_alerts(load_catalog(str(warehouse)), config, catalog_name=str(warehouse))
    assert second["sent"] == [] and second["already_sent"] == 1
    assert len(listener.bodies) == 1
    # At the score itself nothing alerts: "below" is strict.
    at = parse_alerts({"webhook": listener.url, **FAST, "score_below": small})
    dry = run_alerts(load_catalog(str(warehouse)), at, catalog_name="x", dry_run=True)
    assert dry["would_send"] == [] and dry["already_sent"] == 0


def test_a_table_property_overrides_the_threshold(listener: Listener, warehouse: Path) -> None:
    config = parse_alerts({"webhook": listener.url, **FAST, "score_below": 0})
    catalog = load_catalog(str(warehouse))
    assert run_alerts(catalog, config, catalog_name="wh", dry_run=True)["would_send"] == []
    _set_property(warehouse / "db" / "empty", "icecore.alert.score_below", "100")
    _set_property(warehouse / "db" / "small", "icecore.alert.score_below", "100")
    found = run_alerts(load_catalog(str(warehouse)), config, catalog_name="wh", dry_run=True)
    # db.empty scores 100: not below 100; db.small scores less.
    assert [(e["table"], e["threshold"]) for e in found["would_send"]] == [(SMALL, 100)]
    assert listener.attempts == 0  # a dry run sends nothing


def test_a_sql_catalog_remembers_what_was_sent_in_its_database(
    listener: Listener, tmp_path: Path
) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PeerCatalog

    peer = PeerCatalog("peer", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(tmp_path))
    _write_small(peer)
    uri = f"sqlite:///{tmp_path / 'cat.db'}"
    score = catalog_health(load_catalog(uri))[0]["score"]
    config = parse_alerts({"webhook": listener.url, **FAST, "score_below": score + 1})
    assert len(run_alerts(load_catalog(uri), config, catalog_name=uri)["sent"]) == 1
    assert run_alerts(load_catalog(uri), config, catalog_name=uri)["sent"] == []
    store = alert_store_for(load_catalog(uri))
    assert store is not None and [s.payload["table"] for s in store.recent(5)] == [SMALL]
    assert not list(tmp_path.glob("**/" + ALERTS_FILE))
    assert len(listener.bodies) == 1


@pytest.mark.slow
def test_the_cli_sends_prints_and_dry_runs(
    listener: Listener, warehouse: Path, tmp_path: Path
) -> None:
    config = _config(tmp_path, listener.url, **FAST, score_below=_alerting_small(warehouse))
    env = {**os.environ, "ICECORE_CONFIG": str(config)}

    def cli(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "icecore", "alerts", str(warehouse), *args],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert "SECRET-PATH" not in done.stdout + done.stderr
        return dict(json.loads(done.stdout))

    dry = cli("--dry-run")
    assert [e["table"] for e in dry["would_send"]] == [SMALL] and listener.attempts == 0
    assert dry["webhook"] == listener.url.split("/hook")[0]
    sent = cli()
    assert [e["table"] for e in sent["sent"]] == [SMALL] and len(listener.bodies) == 1
    assert cli()["sent"] == [] and len(listener.bodies) == 1


def test_sending_without_a_webhook_is_one_sentence(warehouse: Path) -> None:
    with pytest.raises(ValidationError, match="No webhook"):
        run_alerts(load_catalog(str(warehouse)), AlertConfig(), catalog_name="wh")


def test_the_config_keeps_the_raw_file_for_alerts(tmp_path: Path, listener: Listener) -> None:
    config = load_config(_config(tmp_path, listener.url, score_below=70))
    assert alert_config(config).score_below == 70


def test_a_read_only_deployment_sends_but_remembers_nothing(
    listener: Listener, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    config = parse_alerts(
        {"webhook": listener.url, **FAST, "score_below": _alerting_small(warehouse)}
    )
    for _ in range(2):
        out = run_alerts(load_catalog(str(warehouse)), config, catalog_name="wh")
        assert len(out["sent"]) == 1 and out["remembered"] is False
    assert len(listener.bodies) == 2 and not (warehouse / ALERTS_FILE).exists()


def test_a_warehouse_file_keeps_the_newest_alerts_past_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icecore.catalog import alert_store
    from icecore.catalog.alert_store import FileAlertStore, SentAlert

    monkeypatch.setattr(alert_store, "MAX_KEPT", 10)
    store = FileAlertStore(tmp_path)
    for i in range(1, 13):
        store.add(SentAlert(f"k{i}", i, {"event": "job_failed", "table": "db.t"}))
    assert store.keys() == {f"k{i}" for i in range(3, 13)}  # the newest ten
    assert [s.key for s in store.recent(2)] == ["k12", "k11"]


def test_after_one_alert_fails_a_run_gives_up_on_the_rest(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PeerCatalog

    peer = PeerCatalog("p", uri=f"sqlite:///{tmp_path / 'p.db'}", warehouse=str(tmp_path))
    for name in ("db.a", "db.b", "db.c"):
        _write_small(peer, name=name)
    uri = f"sqlite:///{tmp_path / 'p.db'}"
    score = max(r["score"] for r in catalog_health(load_catalog(uri)))
    listener = Listener([500] * 10)
    try:
        config = parse_alerts(
            {"webhook": listener.url, **FAST, "retries": 0, "score_below": score + 1}
        )
        out = run_alerts(load_catalog(uri), config, catalog_name=uri)
        assert out["sent"] == [] and len(out["failed"]) == 3
        assert listener.attempts == 1  # the other two were not tried: the hook is failing
        listener.script = []
        again = run_alerts(load_catalog(uri), config, catalog_name=uri)
        assert len(again["sent"]) == 3 and listener.wait("bodies", 3)  # sent on the next run
    finally:
        listener.close()


@pytest.mark.slow
def test_two_runs_at_once_over_a_warehouse_send_each_alert_once(
    listener: Listener, warehouse: Path, tmp_path: Path
) -> None:
    config = _config(tmp_path, listener.url, **FAST, score_below=_alerting_small(warehouse))
    env = {**os.environ, "ICECORE_CONFIG": str(config)}
    command = [sys.executable, "-m", "icecore", "alerts", str(warehouse)]
    runs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    outs = [json.loads(run.communicate(timeout=120)[0]) for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert sorted(len(out["sent"]) for out in outs) == [0, 1]
    assert len(listener.bodies) == 1

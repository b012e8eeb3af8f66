"""The CLI records its commits in the audit log, and ``icecore audit`` reads the log.

Real processes: ``python -m icecore evolve``/``ref`` commit to hand-written tables in a
warehouse folder or a SQLite catalog; a commit is interrupted by SIGKILL while it stalls at
a failpoint (:mod:`icecore.failpoints`) before or after its swap, the way a crash would.
The expected principal is the OS user as ``getpass`` names it; expected positions come from
the hand-written tables.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from icecore.audit import AuditEvent
from icecore.catalog import SqlCatalog, TableIdentifier
from icecore.catalog.audit_store import AUDIT_FILE, audit_sink_for
from icecore.catalog.sql import SqlCatalogAdmin, create_sqlite_catalog
from icecore.cli import main
from icecore.failpoints import ENV
from tests.icecore.evolution.hand_table import write_table
from tests.icecore.refs.graph_table import S1, S2, S3, refs_of, write_graph_table
from tests.icecore.test_cli import REPO, icecore_cli

T = TableIdentifier(("db",), "t")


def in_process(*args: str) -> tuple[int, str, str]:
    """``icecore ARGS`` run in this process (fast); its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def audit(*args: str) -> list[dict[str, Any]]:
    code, out, err = in_process("audit", *args)
    assert code == 0, err
    return list(json.loads(out))


def sqlite_warehouse(root: Path) -> SqlCatalog:
    folder = write_table(root, 2)
    catalog = SqlCatalog(create_sqlite_catalog(root / "catalog.db"))
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    admin.register_table(T, str(folder / "metadata" / "v1.metadata.json"))
    return catalog


def raw_events(catalog: Any) -> list[AuditEvent]:
    sink = audit_sink_for(catalog)
    assert sink is not None
    return list(sink.read())


def test_cli_commits_name_the_os_user(tmp_path: Path) -> None:
    folder = write_graph_table(tmp_path)
    user = getpass.getuser()
    done = icecore_cli("ref", str(folder), "rollback", "--to", str(S2))
    assert done.returncode == 0, done.stderr
    done = icecore_cli("ref", str(folder), "create-tag", "t1", "--at", str(S1))
    assert done.returncode == 0, done.stderr
    done = icecore_cli("evolve", str(folder), "--set-property", "k=v")
    assert done.returncode == 0, done.stderr
    assert refs_of(folder)["main"] == S2 and refs_of(folder)["t1"] == S1
    changes = audit(str(tmp_path))
    assert len(changes) == 3
    assert {(c["principal"], c["source"], c["result"], c["table"]) for c in changes} == {
        (user, "cli", "committed", "db.g")
    }
    newest, middle, oldest = changes
    assert f"branch main: {S3} -> {S2}" in oldest["summary"]
    assert "tag t1 created" in middle["summary"]
    assert "properties: k" in newest["summary"]
    # one change's after is the next one's before: the log follows the table's versions
    assert oldest["metadata_after"] == middle["metadata_before"]
    assert middle["metadata_after"] == newest["metadata_before"]
    assert (tmp_path / "db" / "g" / "metadata" / "v4.metadata.json").as_posix() == newest[
        "metadata_after"
    ]


def test_a_dry_run_records_nothing(tmp_path: Path) -> None:
    folder = write_graph_table(tmp_path)
    done = icecore_cli("ref", str(folder), "rollback", "--to", str(S2), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / AUDIT_FILE).exists()


def test_audit_filters(tmp_path: Path) -> None:
    catalog = sqlite_warehouse(tmp_path)
    write_table(tmp_path, 2, name="u")
    SqlCatalogAdmin(catalog).register_table(
        TableIdentifier(("db",), "u"), str(tmp_path / "db" / "u" / "metadata" / "v1.metadata.json")
    )
    uri = f"sqlite:///{catalog.path}"
    for i, name in enumerate(("t", "u", "t")):
        code, _, err = in_process("evolve", f"{uri}::db.{name}", "--set-property", f"n{i}=1")
        assert code == 0, err
    everything = audit(uri)
    assert [c["table"] for c in everything] == ["db.t", "db.u", "db.t"]
    assert [c["table"] for c in audit(uri, "--table", "db.u")] == ["db.u"]
    assert len(audit(uri, "--principal", getpass.getuser())) == 3
    assert audit(uri, "--principal", "somebody-else") == []
    cut = everything[1]["time"]  # the middle change's own time: it and the newer one
    assert [c["id"] for c in audit(uri, "--since", cut)] == [c["id"] for c in everything[:2]]
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    assert audit(uri, "--since", later.isoformat()) == []
    code, _, err = in_process("audit", uri, "--since", "yesterday")
    assert code == 1 and "ISO-8601" in err


def test_audit_of_a_catalog_without_a_log_is_one_sentence(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    code, _, err = in_process("audit", str(folder / "metadata" / "v1.metadata.json"))
    assert code == 1 and err.count("\n") == 1
    assert "keeps no audit log" in err


# --- a commit killed with SIGKILL ---------------------------------------------------------


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def evolve_killed_at(table_arg: str, point: str, reached: Callable[[], bool]) -> None:
    """``icecore evolve`` adding column z, stalled at ``point`` and killed -9 once there."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "icecore",
            "evolve",
            table_arg,
            "--schema-change",
            "add_column z string",
        ],
        cwd=REPO,
        env={**os.environ, ENV: f"{point}=stall", "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: reached() or process.poll() is not None, f"the commit to reach {point}")
        assert process.poll() is None, "the commit ended before it was killed"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def test_sigkill_after_the_swap_never_loses_the_commit(tmp_path: Path) -> None:
    catalog = sqlite_warehouse(tmp_path)
    before = catalog.metadata_location(T)
    evolve_killed_at(
        f"sqlite:///{catalog.path}::db.t",
        "sql-after-commit",
        lambda: catalog.metadata_location(T) != before,
    )
    after = catalog.metadata_location(T)
    assert after != before  # the swap is in: the commit landed
    events = raw_events(catalog)
    assert [(e.phase, e.result) for e in events] == [("intent", "started")]  # no outcome
    [change] = audit(f"sqlite:///{catalog.path}")
    # the intent is there, and the table's metadata shows it landed
    assert (change["result"], change["metadata_before"], change["metadata_after"]) == (
        "committed",
        before,
        after,
    )
    assert "no outcome was recorded" in change["reason"]


def test_sigkill_before_the_swap_is_unknown_and_changes_nothing(tmp_path: Path) -> None:
    catalog = sqlite_warehouse(tmp_path)
    before = catalog.metadata_location(T)
    metadata = tmp_path / "db" / "t" / "metadata"
    evolve_killed_at(
        f"sqlite:///{catalog.path}::db.t",
        "sql-after-write",
        lambda: len(list(metadata.glob("*.metadata.json"))) > 1,
    )
    assert catalog.metadata_location(T) == before
    [change] = audit(f"sqlite:///{catalog.path}")
    assert (change["result"], change["metadata_before"], change["metadata_after"]) == (
        "unknown",
        before,
        None,
    )
    assert change["principal"] == getpass.getuser()


def test_sigkill_after_the_version_file_of_a_folder_table(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    evolve_killed_at(
        str(folder), "fs-hint", lambda: (folder / "metadata" / "v2.metadata.json").exists()
    )
    lines = (tmp_path / AUDIT_FILE).read_text().splitlines()
    assert [json.loads(line)["phase"] for line in lines] == ["intent"]
    [change] = audit(str(tmp_path))
    assert change["result"] == "committed"
    assert change["metadata_after"] == str(folder / "metadata" / "v2.metadata.json")

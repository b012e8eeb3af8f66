"""``python -m icecore ref``: JSON out, dry runs write nothing, errors are one sentence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.icecore.evolution.hand_table import tree_state

from .graph_table import S1, S2, S3, S4, S5, TIMES, raw, write_graph_table


def ref(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icecore", "ref", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "ICECORE_READ_ONLY": "0", **(env or {})},
    )


def ok(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def refs_on_disk(folder: Path) -> dict[str, Any]:
    return dict(raw(folder)["refs"])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_graph_table(tmp_path)


def test_dry_run_shows_the_move_and_writes_nothing(folder: Path) -> None:
    before = tree_state(folder)
    out = ok(ref(str(folder), "rollback", "--to", str(S1), "--dry-run"))
    assert tree_state(folder) == before
    assert out["dry_run"] is True
    assert out["moves"] == [
        {
            "ref": "main",
            "type": "branch",
            "from_snapshot_id": S3,
            "to_snapshot_id": S1,
            "operation": "rollback",
        }
    ]
    assert out["metadata"]["current-snapshot-id"] == S1
    assert {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": S3} in out[
        "requirements"
    ]


@pytest.mark.slow
def test_each_verb_commits(folder: Path) -> None:
    out = ok(ref(str(folder), "rollback", "--as-of", "1970-01-01T00:00:02.5Z"))
    assert out["committed"] is True and out["current_snapshot_id"] == S2
    ok(ref(str(folder), "set-current", "--to", str(S3)))
    ok(ref(str(folder), "create-branch", "dev", "--at", str(S2), "--min-snapshots-to-keep", "4"))
    ok(ref(str(folder), "create-tag", "rel", "--max-ref-age-ms", "99"))
    ok(ref(str(folder), "fast-forward", "dev", "--to", "audit"))
    ok(ref(str(folder), "rename", "rel", "release"))
    ok(ref(str(folder), "drop", "v1"))
    out = ok(ref(str(folder), "publish", "w1"))
    assert out["current_snapshot_id"] == S5
    assert out["refs"]["dev"] == {
        "snapshot_id": S4,
        "type": "branch",
        "max_ref_age_ms": None,
        "max_snapshot_age_ms": None,
        "min_snapshots_to_keep": 4,
    }
    assert refs_on_disk(folder) == {
        "main": {"snapshot-id": S5, "type": "branch"},
        "audit": {"snapshot-id": S4, "type": "branch", "min-snapshots-to-keep": 3},
        "dev": {"snapshot-id": S4, "type": "branch", "min-snapshots-to-keep": 4},
        "release": {"snapshot-id": S3, "type": "tag", "max-ref-age-ms": 99},
    }


def test_cherry_pick_and_branch_option(folder: Path) -> None:
    ok(ref(str(folder), "rollback", "--to", str(S2), "--branch", "audit"))
    assert refs_on_disk(folder)["audit"]["snapshot-id"] == S2
    ok(ref(str(folder), "cherry-pick", str(S5)))
    assert refs_on_disk(folder)["main"]["snapshot-id"] == S5


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["rollback", "--to", str(S4)], "not an ancestor"),
        (["rollback", "--as-of", str(TIMES[S1])], "not an ISO-8601 time"),
        (["drop", "main"], "main branch"),
        (["create-tag", "audit"], "already"),
        (["create-tag", "t", "--min-snapshots-to-keep", "2"], "branches only"),
        (["fast-forward", "v1", "--to", "main"], "is a tag"),
        (["publish", "never"], "no snapshot"),
        (["rollback"], "one of the arguments"),
        (["teleport"], "invalid choice"),
    ],
)
def test_errors_are_one_sentence_and_write_nothing(
    folder: Path, args: list[str], words: str
) -> None:
    before = tree_state(folder)
    line = one_line_error(ref(str(folder), *args))
    assert words in line, line
    assert tree_state(folder) == before


def test_read_only_refuses_commits_but_not_dry_runs(folder: Path) -> None:
    before = tree_state(folder)
    env = {"ICECORE_READ_ONLY": "1"}
    line = one_line_error(ref(str(folder), "create-tag", "t", env=env))
    assert "read-only" in line
    assert tree_state(folder) == before
    assert ok(ref(str(folder), "create-tag", "t", "--dry-run", env=env))["dry_run"] is True
    assert tree_state(folder) == before

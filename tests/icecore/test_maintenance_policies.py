"""``[[policies]]`` parsing and which value a table gets (icecore/maintenance_policies.py).

Expected values are the ones written in each test's own TOML text: a table gets the most
specific entry's value per key, a table property overrides it, a bad value is one sentence
naming the file and the key.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from icecore.errors import ValidationError
from icecore.maintenance_policies import (
    effective,
    load_policies,
    lock_path,
    parse_duration,
    table_lock,
)
from tests.icecore.evolution.hand_table import write_table

REPO = Path(__file__).resolve().parents[2]


def _policies(tmp_path: Path, text: str) -> tuple[Path, object]:
    path = tmp_path / "icecore.toml"
    path.write_text(text)
    return path, load_policies(path)


def test_the_most_specific_entry_wins_per_key_and_later_wins_a_tie(tmp_path: Path) -> None:
    path, policies = _policies(
        tmp_path,
        """
[[policies]]
tables = ["*"]
compact_small_file_share = 0.3
expire_older_than = "7d"

[[policies]]
tables = ["sales.*"]
compact_small_file_share = 0.5

[[policies]]
tables = ["sales.orders"]
expire_older_than = "2d"

[[policies]]
tables = ["sales.?????"]
rewrite_manifests_per_snapshot = 50

[[policies]]
tables = ["sales.o*"]
rewrite_manifests_per_snapshot = 70
""",
    )
    orders = effective("sales.orders", policies, {}, str(path))  # type: ignore[arg-type]
    assert orders["compact_small_file_share"].value == 0.5
    assert "entry 2" in orders["compact_small_file_share"].source
    assert orders["expire_older_than"].to_dict("expire_older_than")["value"] == "2d"
    assert "entry 3" in orders["expire_older_than"].source
    # "sales.?????" does not match "sales.orders" (6 letters); "sales.o*" does.
    assert orders["rewrite_manifests_per_snapshot"].value == 70
    other = effective("hr.people", policies, {}, str(path))  # type: ignore[arg-type]
    assert other["compact_small_file_share"].value == 0.3
    assert other["expire_older_than"].value == 7 * 24 * 3600 * 1000
    assert "rewrite_manifests_per_snapshot" not in other
    # sales.items (5 letters) matches "sales.?????", not "sales.o*".
    items = effective("sales.items", policies, {}, str(path))  # type: ignore[arg-type]
    assert items["rewrite_manifests_per_snapshot"].value == 50


def test_a_tie_goes_to_the_later_entry(tmp_path: Path) -> None:
    path, policies = _policies(
        tmp_path,
        """
[[policies]]
tables = ["a.*"]
expire_retain_last = 3

[[policies]]
tables = ["a.*"]
expire_retain_last = 9
""",
    )
    assert effective("a.t", policies, {}, str(path))["expire_retain_last"].value == 9  # type: ignore[arg-type]


def test_a_table_property_overrides_the_file(tmp_path: Path) -> None:
    path, policies = _policies(
        tmp_path, '[[policies]]\ntables = ["*"]\norphans_older_than = "3d"\n'
    )
    props = {"icecore.policy.orphans_older_than": "5d", "icecore.policy.expire_retain_last": "4"}
    found = effective("n.t", policies, props, str(path))  # type: ignore[arg-type]
    assert found["orphans_older_than"].value == 5 * 24 * 3600 * 1000
    assert found["orphans_older_than"].source == "table property icecore.policy.orphans_older_than"
    assert found["expire_retain_last"].value == 4


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ("compact_small_file_share = 1.5", "compact_small_file_share"),
        ('compact_small_file_share = "lots"', "compact_small_file_share"),
        ('expire_older_than = "7 days"', "expire_older_than"),
        ("expire_older_than = 7", "expire_older_than"),
        ("expire_retain_last = 0", "expire_retain_last"),
        ("rewrite_manifests_per_snapshot = true", "rewrite_manifests_per_snapshot"),
        ('orphans_older_than = "12h"', "orphans_older_than"),
        ("compact_smal_file_share = 0.3", "compact_smal_file_share"),
        ('tables = "*"', "tables"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_the_file_and_key(
    tmp_path: Path, entry: str, key: str
) -> None:
    path = tmp_path / "icecore.toml"
    path.write_text(f"[[policies]]\n{entry}\n")
    with pytest.raises(ValidationError) as raised:
        load_policies(path)
    text = str(raised.value)
    assert str(path) in text and key in text
    assert text.endswith(".") and "\n" not in text


def test_orphans_below_one_day_are_refused_from_a_table_property_too(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="safety floor of 1d"):
        effective("n.t", (), {"icecore.policy.orphans_older_than": "23h"}, "x")
    assert effective("n.t", (), {"icecore.policy.orphans_older_than": "1d"}, "x")


def test_durations() -> None:
    assert parse_duration("90s", "x") == 90_000
    assert parse_duration("2w", "x") == 14 * 24 * 3600 * 1000
    with pytest.raises(ValidationError, match="--every"):
        parse_duration("1 hour", "--every")


def test_no_file_and_no_policies_mean_nothing_is_due(tmp_path: Path) -> None:
    assert load_policies(tmp_path / "absent.toml") == ()
    assert effective("n.t", load_policies(tmp_path / "absent.toml"), {}, "x") == {}


def test_the_table_lock_excludes_another_process_and_dies_with_its_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_MAINTAIN_LOCKS", str(tmp_path))
    path = lock_path("cat", "n.t")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with table_lock("cat", "n.t") as fd:
            assert fd is None
        with table_lock("cat", "n.other") as fd:
            assert fd is not None
    finally:
        holder.kill()
        holder.wait()
    with table_lock("cat", "n.t") as fd:
        assert fd is not None
        with table_lock("cat", "n.t") as again:
            assert again is None


def test_every_repeats_rounds_until_ctrl_c(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    write_table(warehouse, 2)
    config = tmp_path / "icecore.toml"
    config.write_text('[[policies]]\ntables = ["db.*"]\nexpire_retain_last = 2\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "icecore", "maintain", str(warehouse), "--every", "1s"],
        cwd=REPO,
        env={**os.environ, "ICECORE_CONFIG": str(config), "ICECORE_MAINTAIN_LOCKS": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    rounds = [json.loads(process.stdout.readline()) for _ in range(2)]
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    for found in rounds:
        (row,) = found
        assert row["table"] == "db.t"
        assert row["policies"]["expire_retain_last"] == {
            "value": 2,
            "source": f"{config} [[policies]] entry 1 (tables = ['db.*'])",
        }
    assert json.loads(out)["rounds"] >= 2


def test_a_bad_table_property_fails_that_table_and_the_command(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    folder = write_table(warehouse, 2)
    metadata = folder / "metadata" / "v1.metadata.json"
    raw = json.loads(metadata.read_text())
    raw["properties"]["icecore.policy.expire_retain_last"] = "none"
    metadata.write_text(json.dumps(raw))
    write_table(warehouse, 2, name="ok")
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "maintain", str(warehouse)],
        cwd=REPO,
        env={**os.environ, "ICECORE_CONFIG": str(tmp_path / "none.toml")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    rows = {r["table"]: r for r in json.loads(done.stdout)}
    assert "icecore.policy.expire_retain_last" in rows["db.t"]["error"]
    assert "error" not in rows["db.ok"]

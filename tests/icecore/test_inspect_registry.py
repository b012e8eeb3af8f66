"""One registry of metadata tables, and every consumer reading it.

Each consumer's list is read from the consumer at run time (the CLI's parser, the tables
user SQL is offered, the typed methods of ``t.inspect``) and compared with the registry, so
a kind missing anywhere fails here. The SQL size guard is judged by its effect: a kind it
lets through at zero bounds must read no manifest and at most one manifest list.
"""

from __future__ import annotations

import argparse
import inspect as pyinspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
import icecore.sql
from icecore import manifest_arrow
from icecore.cli import build_parser, main
from icecore.errors import ValidationError
from icecore.inspect import METADATA_TABLES, Scope
from icecore.inspect.accessor import MetadataTables
from icecore.sql import ROWS_TABLE, SqlLimits, run_sql
from icecore.table_data import TableData
from tests.conftest import REPO

SMALL_TABLE = REPO / "tests/data/metadata/spark/trips-00024.metadata.json"
"""A Spark-written metadata file (its manifests are not here: metadata.json kinds only)."""


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise AssertionError("the CLI has no sub-commands")


def test_the_cli_offers_every_kind() -> None:
    inspect_parser = _subparser(build_parser(), "inspect")
    (kind,) = [a for a in inspect_parser._actions if a.dest == "kind"]
    assert tuple(kind.choices or ()) == tuple(METADATA_TABLES)
    listed = inspect_parser.format_help().split("KIND, and what one row is:", 1)[1]
    assert [line.split()[0] for line in listed.strip().splitlines()] == list(METADATA_TABLES)


def test_the_cli_refuses_an_unknown_kind_in_one_sentence_naming_every_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", str(SMALL_TABLE), "filez"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "filez" in err
    assert all(repr(kind) in err for kind in METADATA_TABLES)


def test_user_sql_offers_every_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    offered: dict[str, Any] = {}

    def capture(sql: str, sources: Mapping[str, Any], limits: Any = None, **_: Any) -> pa.Table:
        offered.update(sources)
        return pa.table({"n": [0]})

    monkeypatch.setattr(icecore.sql, "query_arrow", capture)
    run_sql(icecore.load_table(str(SMALL_TABLE)), "SELECT 1 AS n")
    assert set(offered) - {ROWS_TABLE} == set(METADATA_TABLES)


def _public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and callable(member)
    }


def test_t_inspect_has_one_typed_method_per_kind_with_the_string_forms_arguments() -> None:
    methods = _public_methods(MetadataTables)
    assert set(methods) == set(METADATA_TABLES)
    by_name = list(pyinspect.signature(MetadataTables.__call__).parameters.values())
    assert [p.name for p in by_name[:2]] == ["self", "kind"]
    for name, method in methods.items():
        params = list(pyinspect.signature(method).parameters.values())
        assert params == [by_name[0], *by_name[2:]], name


def test_t_inspect_is_callable_and_its_methods_give_the_same_tables() -> None:
    """The kinds made from metadata.json alone, on a Spark-written one (no Spark needed)."""
    t = icecore.load_table(str(SMALL_TABLE))
    assert isinstance(t.inspect, MetadataTables)
    table_kinds = [k for k, r in METADATA_TABLES.items() if r.scope is Scope.TABLE]
    assert "snapshots" in table_kinds and "refs" in table_kinds
    for kind in table_kinds:
        by_name = t.inspect(kind)
        assert by_name.num_rows > 0, kind
        assert getattr(t.inspect, kind)().equals(by_name), kind
    with pytest.raises(icecore.NotFound, match="files"):
        t.inspect("filez")


@pytest.mark.spark
def test_typed_methods_equal_the_string_form_at_every_selector(demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    first = min(t.snapshots(), key=lambda s: s.sequence_number)
    selectors: list[dict[str, Any]] = [
        {},
        {"ref": "audit"},
        {"snapshot_id": first.snapshot_id},
        {"as_of": first.timestamp_ms},
    ]
    for kind in METADATA_TABLES:
        for chosen in selectors:
            by_name = t.inspect(kind, **chosen)
            by_method = getattr(t.inspect, kind)(**chosen)
            assert by_method.equals(by_name), (kind, chosen)
    # A selector changes the snapshot kinds (the audit branch differs from main here).
    files = t.inspect.files()
    assert not files.equals(t.inspect.files(snapshot_id=first.snapshot_id))


@pytest.mark.spark
@pytest.mark.parametrize("kind", list(METADATA_TABLES))
def test_the_sql_size_guard_bounds_every_kind_that_reads_manifests(
    demo_warehouse: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At zero bounds a kind is refused, or its build reads no manifest and one list at most.

    Spied where manifests are decoded (:func:`icecore.manifest_arrow.read_manifest_arrow`)
    and manifest lists read (``TableData.manifest_list``), not from the registry's word.
    """
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    assert len(t.snapshots()) > 1
    manifests: list[str] = []
    lists: set[str] = set()
    read_manifest = manifest_arrow.read_manifest_arrow
    read_list = TableData.manifest_list

    def spy_manifest(io: Any, manifest: Any, *args: Any, **kwargs: Any) -> pa.Table:
        manifests.append(manifest.manifest_path)
        return read_manifest(io, manifest, *args, **kwargs)

    def spy_list(self: TableData, snapshot: Any) -> Any:
        lists.add(snapshot.manifest_list)
        return read_list(self, snapshot)

    monkeypatch.setattr(manifest_arrow, "read_manifest_arrow", spy_manifest)
    monkeypatch.setattr(TableData, "manifest_list", spy_list)
    zero = SqlLimits(max_entries=0, max_snapshots=0)
    try:
        answer = run_sql(t, f"SELECT count(*) AS n FROM {kind}", limits=zero)
    except ValidationError as refused:
        assert str(refused).startswith(f"The {kind} table would ")
        assert manifests == [], "refused before any manifest is decoded"
        return
    assert answer.num_rows == 1
    assert manifests == [], f"{kind} decoded manifests past a zero bound"
    assert len(lists) <= 1, f"{kind} read {len(lists)} manifest lists past a zero bound"

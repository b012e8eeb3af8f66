"""``import icecore`` loads no heavy dependency; each is loaded by the first use that needs it.

polars (manifest decoding), sqlglot (filters), duckdb (user SQL), pandas (pulled in by the
first Python-to-Arrow conversion), psycopg and requests (two kinds of catalog), fastavro,
fsspec and pyarrow.compute/parquet cost from 7 to 45 MiB and up to 0.2 s each; a CLI
``history`` or an app page that only reads metadata must not pay for them (issue 18 item 5;
the figures are in bench/import_bench.results.md). Each check runs in a fresh interpreter,
since this test process has loaded them all.

pyarrow and numpy (~0.25 s and ~50 MiB together) are loaded by the first use that reads a
manifest or data (issue 32 item 4): ``import icecore``, loading a table and the CLI's
metadata commands on a table whose snapshot summaries answer (no delete files) need
neither.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "polars",
    "sqlglot",
    "duckdb",
    "pandas",
    "psycopg",
    "requests",
    "fastavro",
    "pyarrow.compute",
    "fsspec",
    "pyarrow.parquet",
)
ARROW = ("pyarrow", "numpy")
"""Loaded by the first manifest or data read, not by loading a table (issue 32 item 4)."""
SMALL_TABLE = REPO / "tests/data/metadata/spark/trips-00024.metadata.json"
DELETE_FREE_TABLE = REPO / "tests/data/metadata/spark/trips-00004.metadata.json"
"""Three appends: every snapshot's summary gives its live rows, so no manifest list is read."""


def loaded_after(code: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``watched`` modules a fresh interpreter holds after running ``code``."""
    listing = f"print(json.dumps([m for m in {watched!r} if m in sys.modules]))"
    probe = f"{code}\nimport json, sys\n{listing}"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_import_icecore_loads_no_heavy_dependency() -> None:
    assert loaded_after("import icecore") == []


def cli(*argv: str) -> str:
    """Code running the CLI in-process on ``argv`` with its output discarded."""
    return (
        "import contextlib, io\n"
        "from icecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({list(argv)!r}) == 0\n"
    )


@pytest.mark.parametrize(
    "code",
    [
        "import icecore",
        "from icecore import At, Catalog, FileIO, Schema, Snapshot, Table, load_table",
        "import icecore.cli",
        # Loading a table and asking what its metadata.json holds reads nothing else.
        f"import icecore\nt = icecore.load_table({str(SMALL_TABLE)!r})\n"
        "t.history(), t.snapshots(), t.refs(), t.snapshot(), t.metadata.current_schema()",
        cli("history", str(DELETE_FREE_TABLE)),
        cli("history", str(DELETE_FREE_TABLE), "--metadata"),
    ],
)
def test_loading_tables_and_metadata_commands_load_neither_pyarrow_nor_numpy(code: str) -> None:
    # A local metadata file is read without fsspec too (FileIO.read and exists).
    assert loaded_after(code, ARROW + HEAVY) == []


def test_import_icecore_loads_neither_the_planner_nor_the_writer() -> None:
    # Icecore's own heavy layers: planning and the metadata tables (pyarrow), and the
    # metadata builder a commit uses (~30 ms of dataclasses), load at first use too.
    own = ("icecore.scan.planner", "icecore.inspect", "icecore.metadata.builder")
    assert loaded_after("import icecore", own) == []


def test_listing_a_folder_loads_only_the_file_system_layer() -> None:
    assert loaded_after(cli("tables", str(SMALL_TABLE.parent)), ARROW + HEAVY) == ["fsspec"]


def test_lazy_public_names_are_the_classes_and_are_listed() -> None:
    # The names icecore/__init__.py loads on first access stay public API: importable,
    # the very classes of their modules, and offered by dir() (a notebook's completion).
    import icecore
    from icecore.inspect.accessor import MetadataTables
    from icecore.scan.planner import Plan, TableScan

    assert (icecore.TableScan, icecore.Plan, icecore.MetadataTables) == (
        TableScan,
        Plan,
        MetadataTables,
    )
    assert set(icecore.__all__) <= set(dir(icecore))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = icecore.nothing_here  # type: ignore[attr-defined]


def test_a_lazy_name_loads_what_it_needs() -> None:
    assert loaded_after("from icecore import TableScan", ARROW) == list(ARROW)


def test_history_of_a_table_reads_metadata_only() -> None:
    # The CLI's `history`: load a table by its metadata file and list its snapshots. This
    # table has delete files, so its manifest lists are read for the live row counts
    # (icecore.row_counts: pyarrow and numpy), but nothing that reads rows or plans.
    code = (
        "import contextlib, io, sys\n"
        "from icecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['history', {str(SMALL_TABLE)!r}])"
    )
    assert loaded_after(code) == []


@pytest.mark.parametrize(
    ("code", "needed"),
    [
        ("from icecore.expressions.parser import parse_filter; parse_filter('id = 5')", "sqlglot"),
        ("import icecore.catalog as c; c.RestCatalog", "requests"),
    ],
)
def test_first_use_loads_the_dependency(code: str, needed: str) -> None:
    # The other side: laziness must not lose the dependency where it is needed.
    assert needed in loaded_after(f"import icecore\n{code}")


def test_postgres_uri_helpers_load_no_driver() -> None:
    # The app hides a typed URI's password and the pipeline builds Spark's JDBC settings from
    # it: both parse PostgreSQL URIs without opening a connection, so without psycopg.
    code = (
        "from ui.served import public_catalog\n"
        "public_catalog('postgresql://ann:pw@db.example/lake')\n"
        "import pipeline.maintenance\n"
        "from pipeline.spark import jdbc_catalog_conf\n"
        "jdbc_catalog_conf('pg', 'postgresql://ann:pw@db.example/lake', '/tmp')"
    )
    assert "psycopg" not in loaded_after(code)


SCAN_FILTERS = {
    "no filter": "None",
    "an expression": (
        "UnboundPredicate(Operation.GT, Reference('zone_id'), (Literal(3),))"  # zone_id > 3
    ),
    "a SQL string": "'zone_id > 3'",
}


@pytest.mark.spark
@pytest.mark.parametrize("given", list(SCAN_FILTERS))
def test_a_first_scan_loads_sqlglot_only_for_a_sql_filter(demo_warehouse: Path, given: str) -> None:
    # Issue 32 item 4: a first scan of a small table to Arrow loads the SQL parser only to
    # parse the user's SQL text, and never the SQL engine or a catalog's driver. (pandas and
    # polars it does load: bench/import_bench.results.md, 2026-11-28, says which calls.)
    code = (
        "import icecore\n"
        "from icecore.expressions.model import Literal, Operation, Reference, UnboundPredicate\n"
        f"table = icecore.load_table({f'{demo_warehouse}::demo.zones'!r})\n"
        f"assert table.scan({SCAN_FILTERS[given]}).plan().to_arrow().num_rows > 0\n"
    )
    loaded = loaded_after(code, ("sqlglot", "duckdb", "psycopg", "requests"))
    assert loaded == (["sqlglot"] if given == "a SQL string" else [])

"""Type parameters are checked before any schema holds them (issue 15, finding 4).

Expected outcomes come from the spec's "Primitive Types" table and notes (decimal precision
at most 38, scale fixed; fixed(L) a length), "Nested Types" (map keys required), the latest
spec's ``unknown`` row and "Edge-Interpolation Algorithm" list, and Spark's DecimalType
(scale between 0 and the precision; Spark cannot read a table holding decimal(5,9)).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import icecore
from icecore.errors import ValidationError
from icecore.evolution import parse_type
from icecore.table import Table
from icecore.types import DecimalType, FixedType, ListType, MapType, UnknownType
from tests.conftest import REPO

from .hand_table import tree_state

BAD_TYPES = [
    ("decimal(5,9)", "scale must be between 0 and its precision (5)"),
    ("decimal(5, -1)", "scale must be between 0 and its precision (5)"),
    ("decimal(0,0)", "precision must be between 1 and 38"),
    ("decimal(39,2)", "precision must be between 1 and 38"),
    ("fixed[0]", "length must be between 1 and"),
    ("fixed(0)", "length must be between 1 and"),
    ("fixed[2147483648]", "length must be between 1 and"),
    ("list<decimal(5,9)>", "'c.element'"),
    ("map<decimal(2,3), int>", "'c.key'"),
    ("map<string, fixed[0]>", "'c.value'"),
    ("struct<a: int, b: decimal(40,1)>", "'c.b'"),
    ("list<struct<x: map<string, decimal(1,2)>>>", "'c.element.x.value'"),
    ("map<unknown, int>", "map keys are required"),
    ("geography(EPSG:4326, straight)", "edge algorithm must be one of"),
    ('geometry({"type": "x"})', "never inline PROJJSON"),
]
GOOD_TYPES = [
    ("decimal(1,0)", DecimalType(1, 0)),
    ("decimal(38,38)", DecimalType(38, 38)),
    ("decimal(38, 0)", DecimalType(38, 0)),
    ("fixed[1]", FixedType(1)),
    ("fixed(16)", FixedType(16)),
    ("list<decimal(10,10)>", ListType(0, DecimalType(10, 10), element_required=False)),
    ("map<fixed[4], decimal(3,1)>", MapType(0, FixedType(4), 0, DecimalType(3, 1), False)),
    ("list<unknown>", ListType(0, UnknownType(), element_required=False)),
]


@pytest.mark.parametrize(("text", "message"), BAD_TYPES)
def test_bad_type_texts_are_refused_with_one_sentence(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_type(text, "c")
    sentence = str(info.value)
    assert message in sentence and "\n" not in sentence
    assert sentence.startswith("Cannot use ") and sentence.endswith(".")


@pytest.mark.parametrize(("text", "expected"), GOOD_TYPES)
def test_good_type_texts_parse(text: str, expected: object) -> None:
    assert parse_type(text, "c") == expected


@pytest.mark.parametrize("version", [2, 3])
def test_api_builders_and_preview_refuse_bad_parameters(tmp_path: Path, version: int) -> None:
    from .hand_table import write_table

    table = icecore.load_table(str(write_table(tmp_path, version)))
    before = tree_state(tmp_path)
    with pytest.raises(ValidationError, match="decimal's scale"):
        table.update_schema().add_column("c", "decimal(5,9)").preview()
    with pytest.raises(ValidationError, match="decimal's scale"):
        table.update_schema().add_column("c", DecimalType(5, 9)).commit()
    with pytest.raises(ValidationError, match="'c.element'"):
        table.update_schema().add_column("c", ListType(0, FixedType(0))).commit()
    with pytest.raises(ValidationError, match="precision must be between 1 and 38"):
        table.update_schema().update_column("amount", "decimal(39,2)").preview()
    with pytest.raises(ValidationError, match="precision must be between 1 and 38"):
        table.update_schema().update_column("amount", DecimalType(40, 2)).commit()
    assert tree_state(tmp_path) == before


def test_decimal_widening_keeps_the_scale_and_grows_the_precision(v2_table: Table) -> None:
    """Spec "Schema Evolution": decimal(P, S) to decimal(P', S) only if P' > P."""
    amount = v2_table.metadata.current_schema().find_field_by_name("amount")
    assert amount is not None and amount.field_type == DecimalType(12, 2)
    for refused in ("decimal(12,3)", "decimal(14,3)", "decimal(11,2)", "decimal(12,1)"):
        with pytest.raises(ValidationError, match="Cannot change column .amount'"):
            v2_table.update_schema().update_column("amount", refused).preview()
    preview = v2_table.update_schema().update_column("amount", "decimal(14,2)").preview()
    widened = preview.metadata.current_schema().find_field_by_name("amount")
    assert widened is not None and widened.field_type == DecimalType(14, 2)


def test_required_column_refusal_says_what_is_refused(v2_table: Table) -> None:
    with pytest.raises(ValidationError) as info:
        v2_table.update_schema().add_column("c", "int", required=True).preview()
    message = str(info.value)
    assert message.startswith("Cannot add required column 'c':")
    assert "with a default" not in message
    with pytest.raises(ValidationError, match="Cannot add column 'c' with a default:"):
        v2_table.update_schema().add_column("c", "int", default=5).preview()


@pytest.mark.spark
def test_cli_refuses_decimal_5_9_and_the_spark_table_is_unchanged(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    table_dir = tmp_path / "customers_v1"
    shutil.copytree(demo_warehouse / "hadoop" / "demo" / "customers_v1", table_dir)
    contents = {p: p.read_bytes() for p in sorted(table_dir.rglob("*")) if p.is_file()}
    for extra in ([], ["--dry-run"]):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "icecore",
                "evolve",
                str(table_dir),
                "--schema-change",
                "add_column c decimal(5,9)",
                *extra,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 1 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert lines == [
            "error: Cannot use decimal(5,9) for column 'c': a decimal's scale must be between "
            "0 and its precision (5)."
        ]
        after = {p: p.read_bytes() for p in sorted(table_dir.rglob("*")) if p.is_file()}
        assert after == contents
    hint = (table_dir / "metadata" / "version-hint.text").read_text().strip()
    metadata = json.loads((table_dir / "metadata" / f"v{hint}.metadata.json").read_text())
    assert all(f["name"] != "c" for s in metadata["schemas"] for f in s["fields"])

"""Types nested deeper than MAX_NESTING are refused where they enter; up to it all works.

A 150-deep schema parsed before and then broke printing, comparing and serializing with
RecursionError (a 500 from the server). The bound is checked by both parsers (JSON and the
type text) and by ``check_type`` for schemas a change builds; at the bound, every recursive
helper still works.
"""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.arrow_types import arrow_type
from icecore.catalog.rest import RestCatalog
from icecore.errors import IcecoreError, InvalidMetadata, ValidationError
from icecore.evolution import parse_type
from icecore.metadata.builder import encode_metadata
from icecore.metadata.serde import parse_metadata
from icecore.read.name_mapping import parse_name_mapping
from icecore.schema import schema_from_json, schema_to_json
from icecore.server.create import new_table_metadata
from icecore.types import MAX_NESTING, IcebergType, ListType, LongType, check_type, nesting_depth

from .evolution.hand_table import tree_state, write_table


def _json_column(levels: int, kind: str) -> Any:
    column: Any = "long"
    for i in range(levels):
        if kind == "struct":
            column = {
                "type": "struct",
                "fields": [{"id": 10 + i, "name": f"f{i}", "required": False, "type": column}],
            }
        elif kind == "list":
            column = {
                "type": "list",
                "element-id": 10 + i,
                "element": column,
                "element-required": False,
            }
        else:
            column = {
                "type": "map",
                "key-id": 100_000 + i,
                "key": "string",
                "value-id": 10 + i,
                "value": column,
                "value-required": False,
            }
    return column


def _schema(levels: int, kind: str = "struct") -> dict[str, Any]:
    return {
        "type": "struct",
        "schema-id": 0,
        "fields": [{"id": 1, "name": "c", "required": False, "type": _json_column(levels, kind)}],
    }


def _list_type(levels: int) -> IcebergType:
    t: IcebergType = LongType()
    for i in range(levels):
        t = ListType(10 + i, t, element_required=False)
    return t


@pytest.mark.parametrize("kind", ["struct", "list", "map"])
def test_json_deeper_than_the_bound_is_one_sentence(kind: str) -> None:
    for levels in (MAX_NESTING + 1, 150, 10_000):
        with pytest.raises(InvalidMetadata) as caught:
            schema_from_json(_schema(levels, kind))
        message = str(caught.value)
        assert f"nested more than {MAX_NESTING} levels" in message and "\n" not in message


@pytest.mark.parametrize("kind", ["struct", "list", "map"])
def test_at_the_bound_every_recursive_helper_works(kind: str) -> None:
    schema = schema_from_json(_schema(MAX_NESTING, kind))
    column = schema.fields[0].field_type
    assert nesting_depth(column) == MAX_NESTING
    assert str(column).count("<") == MAX_NESTING
    assert schema == schema_from_json(schema_to_json(schema))
    assert arrow_type(column) is not None
    check_type(column, "c")
    metadata = new_table_metadata(location="/tmp/t", schema=_schema(MAX_NESTING, kind))
    assert parse_metadata(encode_metadata(metadata)).current_schema().fields[0].name == "c"


def test_type_text_deeper_than_the_bound_is_refused() -> None:
    ok = "list<" * MAX_NESTING + "long" + ">" * MAX_NESTING
    assert nesting_depth(parse_type(ok)) == MAX_NESTING
    for levels in (MAX_NESTING + 1, 5_000):
        text = "struct<a: " * levels + "long" + ">" * levels
        with pytest.raises(ValidationError, match=f"more than {MAX_NESTING} levels"):
            parse_type(text, "c")


def test_a_change_cannot_build_a_schema_deeper_than_the_bound(tmp_path: Path) -> None:
    table = icecore.load_table(str(write_table(tmp_path)))
    before = tree_state(tmp_path)
    with pytest.raises(ValidationError, match=f"more than {MAX_NESTING} levels"):
        check_type(_list_type(MAX_NESTING + 1), "c")
    with pytest.raises(ValidationError, match=f"more than {MAX_NESTING} levels"):
        table.update_schema().add_column("deep", _list_type(MAX_NESTING + 1)).commit()
    assert tree_state(tmp_path) == before
    preview = table.update_schema().add_column("deep", _list_type(MAX_NESTING)).preview()
    added = preview.metadata.current_schema().find_field_by_name("deep")
    assert added is not None and nesting_depth(added.field_type) == MAX_NESTING


def test_json_nested_too_deep_to_decode_is_one_sentence() -> None:
    with pytest.raises(InvalidMetadata, match="too deeply"):
        parse_metadata("[" * 100_000 + "]" * 100_000, "deep.metadata.json")


def test_a_name_mapping_deeper_than_any_schema_is_one_sentence() -> None:
    """A name mapping nests like a schema, and gets its bound: a column and 64 levels below.

    ``schema.name-mapping.default`` is a table property any writer sets, parsed recursively.
    """
    item: dict[str, Any] = {"names": ["x"], "field-id": 1}
    for i in range(MAX_NESTING):
        item = {"names": [f"f{i}"], "field-id": i + 2, "fields": [item]}
    assert parse_name_mapping([item])[0].names == (f"f{MAX_NESTING - 1}",)
    nested_json = "[" * 100_000 + "]" * 100_000
    for deeper in ([{"names": ["y"], "field-id": 0, "fields": [item]}], nested_json):
        with pytest.raises(InvalidMetadata, match="name-mapping.default nests"):
            parse_name_mapping(deeper)  # type: ignore[arg-type]


class _DeepAnswers(http.server.BaseHTTPRequestHandler):
    """A hostile REST catalog: its config is fine, every other answer nests 100,000 deep."""

    def do_GET(self) -> None:
        deep = b"[" * 100_000 + b"]" * 100_000
        body = b'{"defaults": {}, "overrides": {}}' if self.path.startswith("/v1/config") else deep
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet: nothing on the test's stderr."""


def test_a_rest_answer_nested_too_deep_is_one_sentence() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DeepAnswers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        catalog = RestCatalog(f"http://127.0.0.1:{server.server_address[1]}")
        calls = (catalog.list_namespaces, lambda: catalog.list_tables(("a",)))
        for call in (*calls, lambda: catalog.load_table("a.b")):
            with pytest.raises(IcecoreError, match="is not a JSON object"):
                call()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

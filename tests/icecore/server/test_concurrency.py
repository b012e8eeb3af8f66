"""Eight processes committing different schema changes through the server at once."""

from __future__ import annotations

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer, add_columns_at_once

WRITERS = 8


@pytest.mark.slow
def test_eight_concurrent_schema_changes(rest_server: RestServer) -> None:
    cat = RestCatalog("main", uri=rest_server.url)
    cat.create_namespace("conc")
    cat.create_table("conc.t", Schema(NestedField(1, "id", LongType(), required=False)))
    columns = [f"c{i}" for i in range(WRITERS)]
    results = add_columns_at_once(rest_server.url, "conc.t", columns, lead_s=10.0)
    assert all(v in ("committed", "refused") for v in results.values()), results
    committed = {c for c, v in results.items() if v == "committed"}
    assert committed, results  # the first swap always wins
    schema = SqlCatalog(rest_server.catalog_db).load_table("conc.t").metadata.current_schema()
    names = [f.name for f in schema.fields]
    # every committed change is present, every refused one absent: none lost, none doubled
    assert set(names) == {"id"} | committed
    ids = [f.field_id for f in schema.fields]
    assert len(ids) == len(set(ids))
    assert rest_server.alive()

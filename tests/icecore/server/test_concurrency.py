"""Eight processes committing different schema changes through the server at once."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, LongType, NestedField

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer

WRITERS = 8


def _add_column(url: str, column: str, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    cat = RestCatalog("w", uri=url)
    table = cat.load_table("conc.t")
    time.sleep(max(0.0, start_at - time.time()))
    try:
        with table.update_schema() as update:
            update.add_column(column, IntegerType())
        out.put((column, "committed"))
    except CommitFailedException:
        out.put((column, "refused"))
    except Exception as e:  # anything else is a failure of the test
        out.put((column, f"error: {type(e).__name__}: {e}"))


@pytest.mark.slow
def test_eight_concurrent_schema_changes(rest_server: RestServer) -> None:
    cat = RestCatalog("main", uri=rest_server.url)
    cat.create_namespace("conc")
    cat.create_table("conc.t", Schema(NestedField(1, "id", LongType(), required=False)))
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 4.0  # every writer has loaded the table before any commits
    procs = [
        ctx.Process(target=_add_column, args=(rest_server.url, f"c{i}", start_at, out))
        for i in range(WRITERS)
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
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

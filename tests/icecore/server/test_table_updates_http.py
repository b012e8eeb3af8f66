"""The newer ``TableUpdate`` actions over HTTP, read back by PyIceberg's REST client.

The server used to answer 400 to each of these; now they apply, and what is refused
(removing the current schema or the default spec) is refused with 400 and changes nothing.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from tests.icecore.server.conftest import RestServer


def _commit(server: RestServer, name: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(f"{server.url}/v1/namespaces/upd/tables/{name}", json=body, timeout=30)


def test_statistics_updates_land_and_pyiceberg_reads_them(rest_server: RestServer) -> None:
    catalog = RestCatalog("peer", uri=rest_server.url)
    catalog.create_namespace("upd")
    table = catalog.create_table(
        "upd.stats", Schema(NestedField(1, "id", LongType(), required=False))
    )
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    sid = catalog.load_table("upd.stats").metadata.current_snapshot_id
    stats = {
        "snapshot-id": sid,
        "statistics-path": f"{table.location()}/metadata/stats.puffin",
        "file-size-in-bytes": 100,
        "file-footer-size-in-bytes": 10,
        "blob-metadata": [
            {
                "type": "apache-datasketches-theta-v1",
                "snapshot-id": sid,
                "sequence-number": 1,
                "fields": [1],
                "properties": {"ndv": "2"},
            }
        ],
    }
    pstats = {
        "snapshot-id": sid,
        "statistics-path": f"{table.location()}/metadata/pstats.parquet",
        "file-size-in-bytes": 50,
    }
    answer = _commit(
        rest_server,
        "stats",
        {
            "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": sid}],
            "updates": [
                {"action": "set-statistics", "snapshot-id": sid, "statistics": stats},
                {"action": "set-partition-statistics", "partition-statistics": pstats},
            ],
        },
    )
    assert answer.status_code == 200, answer.text
    md = catalog.load_table("upd.stats").metadata
    assert [(s.snapshot_id, s.statistics_path) for s in md.statistics] == [
        (sid, stats["statistics-path"])
    ]
    assert md.statistics[0].blob_metadata[0].properties == {"ndv": "2"}
    assert [(p.snapshot_id, p.statistics_path) for p in md.partition_statistics] == [
        (sid, pstats["statistics-path"])
    ]
    answer = _commit(
        rest_server,
        "stats",
        {
            "updates": [
                {"action": "remove-statistics", "snapshot-id": sid},
                {"action": "remove-partition-statistics", "snapshot-id": sid},
            ]
        },
    )
    assert answer.status_code == 200, answer.text
    md = catalog.load_table("upd.stats").metadata
    assert md.statistics == [] and md.partition_statistics == []


def test_removing_the_current_schema_or_default_spec_is_refused(rest_server: RestServer) -> None:
    catalog = RestCatalog("peer", uri=rest_server.url)
    catalog.create_namespace("upd2")
    table = catalog.create_table(
        "upd2.t",
        Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "s", StringType(), required=False),
        ),
    )
    with table.update_schema() as update:
        update.delete_column("s")
    before = catalog.load_table("upd2.t").metadata_location

    def commit(updates: list[dict[str, Any]]) -> requests.Response:
        return requests.post(
            f"{rest_server.url}/v1/namespaces/upd2/tables/t", json={"updates": updates}, timeout=30
        )

    refused = commit([{"action": "remove-schemas", "schema-ids": [1]}])
    assert refused.status_code == 400 and "current schema" in refused.json()["error"]["message"]
    refused = commit([{"action": "remove-partition-specs", "spec-ids": [0]}])
    assert refused.status_code == 400 and "default spec" in refused.json()["error"]["message"]
    assert catalog.load_table("upd2.t").metadata_location == before
    # The old schema (no snapshot names it) goes.
    assert commit([{"action": "remove-schemas", "schema-ids": [0]}]).status_code == 200
    assert [s.schema_id for s in catalog.load_table("upd2.t").metadata.schemas] == [1]

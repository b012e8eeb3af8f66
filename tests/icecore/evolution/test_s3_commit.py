"""Filesystem-table commits on S3 (a moto server): conditional puts instead of hard links."""

from __future__ import annotations

import json
from typing import Any

import pytest

from icecore.catalog import load_catalog
from icecore.errors import CommitConflict
from icecore.io import FileIO

from .hand_table import table_json


def test_commit_on_s3_creates_the_next_version_exclusively(s3_server: Any) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server.endpoint)
    client.create_bucket(Bucket="evolve")
    location = "s3://evolve/wh/db/t"
    body = json.dumps(table_json(2, location)).encode()
    client.put_object(Bucket="evolve", Key="wh/db/t/metadata/v1.metadata.json", Body=body)
    client.put_object(Bucket="evolve", Key="wh/db/t/metadata/version-hint.text", Body=b"1")
    io = FileIO(s3_server.properties)
    catalog = load_catalog("s3://evolve/wh", io=io)
    stale = catalog.load_table("db.t")
    committed = stale.update_schema().add_column("note", "string").commit()
    assert committed is not None
    assert committed.metadata_location == "s3://evolve/wh/db/t/metadata/v2.metadata.json"
    hint = client.get_object(Bucket="evolve", Key="wh/db/t/metadata/version-hint.text")
    assert hint["Body"].read() == b"2"
    written = json.loads(
        client.get_object(Bucket="evolve", Key="wh/db/t/metadata/v2.metadata.json")["Body"].read()
    )
    assert [f["name"] for f in written["schemas"][-1]["fields"]][-1] == "note"
    with pytest.raises(CommitConflict, match="current schema changed"):
        stale.update_schema().add_column("other", "string").commit()
    keys = sorted(
        o["Key"] for o in client.list_objects_v2(Bucket="evolve", Prefix="wh/")["Contents"]
    )
    assert keys == [
        "wh/db/t/metadata/v1.metadata.json",
        "wh/db/t/metadata/v2.metadata.json",
        "wh/db/t/metadata/version-hint.text",
    ]

"""A filesystem-layout table placed on S3 (a moto server on 127.0.0.1) is found and resolved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import FilesystemCatalog, TableIdentifier, load_catalog
from icecore.io import FileIO


@pytest.fixture(scope="module")
def s3_warehouse(s3_server: Any, demo_warehouse: Path) -> str:
    """The fixture's filesystem warehouse copied to s3://warehouse/hadoop."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server.endpoint)
    client.create_bucket(Bucket="warehouse")
    local_root = demo_warehouse / "hadoop"
    for path in local_root.rglob("*"):
        if path.is_file():
            key = f"hadoop/{path.relative_to(local_root).as_posix()}"
            client.upload_file(str(path), "warehouse", key)
    return "s3://warehouse/hadoop"


@pytest.mark.spark
def test_s3_filesystem_catalog(s3_server: Any, s3_warehouse: str, demo_warehouse: Path) -> None:
    io = FileIO(s3_server.properties)
    catalog = load_catalog(s3_warehouse, io=io)
    assert isinstance(catalog, FilesystemCatalog)
    assert [str(t) for t in catalog.list_tables()] == ["demo.customers_v1"]
    location = catalog.metadata_location(TableIdentifier.parse("demo.customers_v1"))
    local = FilesystemCatalog(str(demo_warehouse / "hadoop")).metadata_location(
        TableIdentifier.parse("demo.customers_v1")
    )
    assert location.rsplit("/", 1)[-1] == local.rsplit("/", 1)[-1]
    assert io.read(location) == Path(local).read_bytes()

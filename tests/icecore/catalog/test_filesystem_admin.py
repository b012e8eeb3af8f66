"""The management side of a filesystem warehouse, used directly (no server).

The folder is read back by listing it; names that could leave the warehouse never become a
path, and of several threads creating one table exactly one wins.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import icecore
from icecore.catalog.base import TableIdentifier
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin
from icecore.errors import AlreadyExists, NamespaceNotEmpty, NotFound, ValidationError
from icecore.metadata.builder import encode_metadata
from icecore.server.create import new_table_metadata

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


def _admin(root: Path) -> FilesystemCatalogAdmin:
    root.mkdir(parents=True, exist_ok=True)
    return FilesystemCatalogAdmin(FilesystemCatalog(str(root)))


def _create(admin: FilesystemCatalogAdmin, identifier: TableIdentifier) -> str:
    metadata = new_table_metadata(location=admin.default_table_location(identifier), schema=SCHEMA)
    return admin.create_table(identifier, metadata, encode_metadata(metadata))


@pytest.mark.parametrize(
    "identifier",
    [
        TableIdentifier(("db",), "../../etc"),
        TableIdentifier(("db",), "a/b"),
        TableIdentifier(("..",), "t"),
        TableIdentifier(("db", ""), "t"),
        TableIdentifier(("db",), "t\x00"),
        TableIdentifier(("db",), ".t"),
        TableIdentifier(("/abs",), "t"),
    ],
)
def test_table_location_never_leaves_the_warehouse(
    tmp_path: Path, identifier: TableIdentifier
) -> None:
    catalog = FilesystemCatalog(str(tmp_path))
    with pytest.raises(ValidationError, match="Invalid"):
        catalog.table_location(identifier)
    with pytest.raises(ValidationError):
        catalog.load_table(identifier)


@pytest.mark.slow
def test_parallel_creates_of_one_table_one_wins(tmp_path: Path) -> None:
    admin = _admin(tmp_path / "wh")
    admin.create_namespace(("db",), {})
    identifier = TableIdentifier(("db",), "t")
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        try:
            outcomes.append(_create(admin, identifier))
        except AlreadyExists:
            outcomes.append("exists")

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winner = str(tmp_path / "wh" / "db" / "t" / "metadata" / "v1.metadata.json")
    assert sorted(outcomes) == sorted([winner] + ["exists"] * 7)
    assert admin.catalog.metadata_location(identifier) == winner


def test_namespaces_are_folders(tmp_path: Path) -> None:
    admin = _admin(tmp_path / "wh")
    admin.create_namespace(("a", "b"), {"owner": "spark-adds-this"})  # Spark's own: dropped
    with pytest.raises(ValidationError, match="keeps none"):
        admin.create_namespace(("c",), {"owner": "x", "comment": "y"})
    assert admin.all_namespaces() == [("a",), ("a", "b")]
    _create(admin, TableIdentifier(("a",), "t"))
    # A table's folder is not a namespace; nor can a namespace be made inside one.
    assert admin.all_namespaces() == [("a",), ("a", "b")]
    assert not admin.namespace_exists(("a", "t"))
    with pytest.raises(ValidationError, match="is a table"):
        admin.create_namespace(("a", "t", "x"), {})
    (tmp_path / "wh" / "a" / "b" / "notes.txt").write_text("a stray file")
    with pytest.raises(NamespaceNotEmpty):
        admin.drop_namespace(("a", "b"))
    (tmp_path / "wh" / "a" / "b" / "notes.txt").unlink()
    admin.drop_namespace(("a", "b"))
    assert not (tmp_path / "wh" / "a" / "b").exists()
    with pytest.raises(NotFound):
        admin.drop_namespace(("a", "b"))


def test_drop_moves_version_files_only_and_register_brings_the_table_back(
    tmp_path: Path,
) -> None:
    admin = _admin(tmp_path / "wh")
    admin.create_namespace(("db",), {})
    identifier = TableIdentifier(("db",), "t")
    _create(admin, identifier)
    manifest = tmp_path / "wh" / "db" / "t" / "metadata" / "snap-1.avro"
    manifest.write_bytes(b"stands for a manifest list")
    moved = admin.drop_table(identifier)
    assert admin.catalog.list_tables() == []
    assert manifest.read_bytes() == b"stands for a manifest list"
    assert Path(moved).name == "v1.metadata.json" and Path(moved).is_file()
    admin.register_table(identifier, moved)  # a moved file goes back: history kept
    assert admin.catalog.list_tables() == [identifier]
    metadata_dir = tmp_path / "wh" / "db" / "t" / "metadata"
    assert admin.catalog.metadata_location(identifier) == str(metadata_dir / "v1.metadata.json")
    assert not Path(moved).parent.exists()
    with pytest.raises(AlreadyExists):
        admin.register_table(identifier, str(metadata_dir / "v1.metadata.json"))


def test_a_table_folder_with_a_dotted_name_still_opens_by_path(tmp_path: Path) -> None:
    admin = _admin(tmp_path / "wh")
    admin.create_namespace(("db",), {})
    _create(admin, TableIdentifier(("db",), "t"))
    moved = tmp_path / "wh" / "d.b" / "my.table"
    moved.parent.mkdir()
    (tmp_path / "wh" / "db" / "t").rename(moved)
    table = icecore.load_table(str(moved))  # no catalog would name it: read on its own
    assert table.metadata_location == str(moved / "metadata" / "v1.metadata.json")

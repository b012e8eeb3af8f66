"""The one manifest decoder, by columns ("Manifests", inheritance sections, Appendix A)."""

from __future__ import annotations

import datetime as dt
import io
import time
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import icecore
from icecore.avro import (
    HEADER_METADATA_PREFIX,
    read_avro_polars_arrow,
)
from icecore.errors import InvalidMetadata, NotFound
from icecore.io import FileIO
from icecore.manifest_arrow import (
    MAP_COLUMNS,
    RawManifest,
    manifest_batches,
    manifest_tables,
    read_manifest,
    read_manifest_arrow,
    read_manifest_avro,
    read_manifests_avro,
)
from tests.icecore.test_avro import read_tables_together
from tests.icecore.test_manifest import SCHEMA, SPEC, _entry, _manifest_file, _write_manifest

# ---------------------------------------------------------------------------------------
# read_avro_polars_arrow

_LOGICAL = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "d", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "t", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {
            "name": "ts",
            "type": [
                "null",
                {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
            ],
        },
        {
            "name": "dec",
            "type": [
                "null",
                {
                    "type": "fixed",
                    "name": "f9",
                    "size": 9,
                    "logicalType": "decimal",
                    "precision": 20,
                    "scale": 2,
                },
            ],
        },
        {
            "name": "u",
            "type": ["null", {"type": "fixed", "name": "u16", "size": 16, "logicalType": "uuid"}],
        },
        {"name": "b", "type": ["null", "bytes"]},
    ],
}


def _avro(records: list[dict[str, Any]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, _LOGICAL, records, codec="deflate", metadata={"k": "v"})
    return buf.getvalue()


def test_polars_logical_types_and_header() -> None:
    u = uuid.UUID(int=7)
    data = _avro(
        [
            {
                "d": dt.date(1960, 1, 1),
                "t": dt.time(0, 0, 1),
                "ts": dt.datetime(1970, 1, 1, 0, 0, 0, 5, tzinfo=dt.UTC),
                "dec": Decimal("-12.34"),
                "u": u.bytes,
                "b": b"",
            },
            {"d": None, "t": None, "ts": None, "dec": None, "u": None, "b": None},
        ]
    )
    table = read_avro_polars_arrow(data, "mem://x.avro")
    types = {f.name: f.type for f in table.schema}
    assert types["d"] == pa.date32()
    assert types["t"] == pa.time64("ns")  # polars: time-micros reads as nanoseconds
    assert types["ts"] == pa.timestamp("us", tz="UTC")
    assert types["dec"] == pa.decimal128(20, 2)
    assert types["u"] == pa.large_binary()  # uuid logical type dropped
    assert table.column("ts").cast(pa.int64()).to_pylist() == [5, None]
    assert table.column("u").to_pylist() == [u.bytes, None]
    assert table.column("b").to_pylist() == [b"", None]
    metadata = table.schema.metadata or {}
    assert metadata[HEADER_METADATA_PREFIX + b"k"] == b"v"
    assert HEADER_METADATA_PREFIX + b"avro.schema" in metadata


def test_polars_reader_empty_file_falls_back() -> None:
    table = read_avro_polars_arrow(_avro([]), "mem://empty.avro")
    assert table.num_rows == 0
    assert table.column_names == ["d", "t", "ts", "dec", "u", "b"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) - 10],
        lambda b: b[: len(b) // 2],
        lambda b: b[:30],
        lambda b: b"",
        lambda b: b"XXXX" + b[4:],
        lambda b: b + b"junk",
    ],
    ids=["cut-sync", "half", "header", "empty", "magic", "trailing"],
)
def test_polars_reader_refuses_damage(damage: Any) -> None:
    data = _avro([{"d": None, "t": None, "ts": None, "dec": None, "u": None, "b": b"x"}] * 50)
    with pytest.raises(InvalidMetadata, match="mem://bad.avro"):
        read_avro_polars_arrow(damage(data), "mem://bad.avro")


_DAMAGE = {
    "cut-sync": lambda b: b[: len(b) - 10],
    "half": lambda b: b[: len(b) // 2],
    "header": lambda b: b[:30],
    "empty": lambda b: b"",
    "magic": lambda b: b"XXXX" + b[4:],
    "trailing": lambda b: b + b"junk",
}


def _many_blocks(n: int, offset: int, metadata: str = "v") -> bytes:
    """A file of ``n`` records in blocks of a few (and its own random sync marker)."""
    records: list[dict[str, Any]] = [
        {"d": dt.date(2020, 1, 1) + dt.timedelta(days=offset + i), "t": None, "ts": None}
        | {"dec": None, "u": None, "b": str(offset + i).encode()}
        for i in range(n)
    ]
    buf = io.BytesIO()
    fastavro.writer(
        buf, _LOGICAL, records, codec="deflate", metadata={"k": metadata}, sync_interval=60
    )
    return buf.getvalue()


def test_polars_reads_files_with_one_header_together_as_each_alone() -> None:
    files = [
        (_many_blocks(40, 0), "mem://a.avro"),
        (_many_blocks(1, 100), "mem://b.avro"),
        (_avro([]), "mem://empty.avro"),
        (_many_blocks(25, 200, metadata="other"), "mem://c.avro"),  # another header
        (_many_blocks(33, 300), "mem://d.avro"),
    ]
    together = read_tables_together(files)
    alone = [read_avro_polars_arrow(data, path) for data, path in files]
    assert [t.num_rows for t in alone] == [40, 1, 0, 25, 33]
    for got, want in zip(together, alone, strict=True):
        assert isinstance(got, pa.Table)
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("damage", list(_DAMAGE))
def test_a_damaged_file_read_with_others_fails_as_alone(damage: str) -> None:
    good = [(_many_blocks(20, 20 * i), f"mem://{i}.avro") for i in range(3)]
    bad = (_DAMAGE[damage](_many_blocks(20, 99)), "mem://bad.avro")
    together = read_tables_together([good[0], bad, *good[1:]])
    with pytest.raises(InvalidMetadata) as alone:
        read_avro_polars_arrow(*bad)
    assert isinstance(together[1], InvalidMetadata)
    assert str(together[1]) == str(alone.value)
    assert "mem://bad.avro" in str(together[1])
    for got, (data, path) in zip([together[0], *together[2:]], good, strict=True):
        assert isinstance(got, pa.Table)
        assert got.to_pylist() == read_avro_polars_arrow(data, path).to_pylist()


def test_a_damaged_block_inside_a_well_framed_file_fails_as_alone() -> None:
    """Framing intact, a block's compressed bytes not: polars refuses the group; each alone."""
    data = bytearray(_many_blocks(20, 0))
    data[len(data) - 40] ^= 0xFF  # inside the last block's deflate stream
    files = [(_many_blocks(20, 50), "mem://ok.avro"), (bytes(data), "mem://bad.avro")]
    together = read_tables_together(files)
    with pytest.raises(InvalidMetadata) as alone:
        read_avro_polars_arrow(*files[1])
    assert isinstance(together[1], InvalidMetadata)
    assert str(together[1]) == str(alone.value)
    assert isinstance(together[0], pa.Table) and together[0].num_rows == 20


# ---------------------------------------------------------------------------------------
# read_manifest_arrow on hand-written manifests


def test_inheritance_by_columns(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(
        path,
        [
            _entry(1, "a", 100),
            _entry(0, "b", 10, snapshot_id=5, seq=2, file_seq=2, first_row_id=3),
            _entry(2, "c", 8, snapshot_id=6, seq=3, file_seq=4),
            _entry(1, "d", 25, seq=4, city=None),
            _entry(0, "e", 5, snapshot_id=5, seq=3, file_seq=3),
        ],
    )
    manifest = _manifest_file(path, length)
    table = read_manifest_arrow(FileIO(), manifest, SCHEMA, SPEC, 3)
    assert table.column("first_row_id").to_pylist() == [1000, 3, None, 1100, 1125]
    assert table.column("sequence_number").to_pylist() == [7, 2, 3, 4, 3]
    assert table.column("snapshot_id").to_pylist() == [42, 5, 6, 42, 5]
    partition = table.schema.field("partition").type
    assert [(f.name, (f.metadata or {})[b"field_id"]) for f in partition] == [("city", b"1000")]


def test_truncated_bad_magic_and_missing_manifest(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [_entry(1, f"f{i}", i) for i in range(50)])
    data = path.read_bytes()
    path.write_bytes(data[: length // 2])
    for claimed in (length, length // 2):
        with pytest.raises(InvalidMetadata) as err:
            read_manifest_arrow(FileIO(), _manifest_file(path, claimed), SCHEMA, SPEC, 3)
        assert str(path) in str(err.value)
    path.write_bytes(b"XXXX" + data[4:])
    with pytest.raises(InvalidMetadata, match="magic"):
        read_manifest_arrow(FileIO(), _manifest_file(path, length), SCHEMA, SPEC, 3)
    with pytest.raises(NotFound):
        read_manifest_arrow(FileIO(), _manifest_file(tmp_path / "no.avro", 10), SCHEMA, SPEC, 3)


_BENCH = Path("/tmp/benchwh/hadoop/bench/files_100000")


@pytest.mark.skipif(not _BENCH.exists(), reason="the 100k-file bench table is not built")
def test_bench_timing() -> None:
    """Prints decode times of every manifest (not an assertion: machines are noisy)."""
    table = icecore.load_table(str(_BENCH))
    metadata = table.metadata
    snapshot = metadata.current_snapshot()
    assert snapshot is not None
    schema = metadata.current_schema()
    manifests = table.manifests(snapshot)
    specs = {m.partition_spec_id: metadata.spec_by_id(m.partition_spec_id) for m in manifests}
    version = metadata.format_version

    start = time.perf_counter()
    rows = 0
    for m in manifests:
        spec = specs[m.partition_spec_id]
        assert spec is not None
        rows += len(read_manifest(table.io, m, schema, spec, version))
    middle = time.perf_counter()
    arrow_rows = 0
    for m in manifests:
        spec = specs[m.partition_spec_id]
        assert spec is not None
        arrow_rows += read_manifest_arrow(table.io, m, schema, spec, version).num_rows
    end = time.perf_counter()
    assert rows == arrow_rows
    print(
        f"\n{len(manifests)} manifests, {rows} entries: views {middle - start:.2f} s, "
        f"read_manifest_arrow {end - middle:.2f} s"
    )


# ---------------------------------------------------------------------------------------
# Many manifests converted together (manifest_tables / manifest_batches)


def _three_manifests(tmp_path: Path) -> list[RawManifest]:
    """Three manifests whose list entries give different inherited values."""
    first = tmp_path / "m1.avro"
    second = tmp_path / "m2.avro"
    third = tmp_path / "m3.avro"
    lengths = [
        _write_manifest(first, [_entry(1, "a", 100), _entry(1, "b", 20), _entry(2, "x", 9)]),
        _write_manifest(second, [_entry(1, "c", 7), _entry(0, "d", 3, snapshot_id=5, seq=2)]),
        _write_manifest(third, [_entry(1, "e", 4), _entry(1, "f", 6)]),
    ]
    manifests = [
        _manifest_file(first, lengths[0]),
        _manifest_file(
            second, lengths[1], added_snapshot_id=43, sequence_number=0, first_row_id=None
        ),
        _manifest_file(third, lengths[2], added_snapshot_id=44, sequence_number=9, first_row_id=50),
    ]
    return [read_manifest_avro(FileIO(), m) for m in manifests]


def test_manifests_converted_together_inherit_from_their_own_list_entries(tmp_path: Path) -> None:
    raws = _three_manifests(tmp_path)
    together = manifest_tables(raws, SCHEMA, SPEC, 3)
    assert [t.num_rows for t in together] == [3, 2, 2]
    # By the spec's rules, manifest by manifest (first_row_id: the manifest's plus the running
    # sum of record counts of its live data files; a manifest without one gives none).
    assert [t.column("snapshot_id").to_pylist() for t in together] == [
        [42, 42, 42],
        [43, 5],
        [44, 44],
    ]
    assert [t.column("sequence_number").to_pylist() for t in together] == [
        [7, 7, None],
        [0, 2],
        [9, 9],
    ]
    assert [t.column("first_row_id").to_pylist() for t in together] == [
        [1000, 1100, None],
        [None, None],
        [50, 54],
    ]
    for raw, table in zip(raws, together, strict=True):
        alone = read_manifest_arrow(FileIO(), raw.manifest_file, SCHEMA, SPEC, 3)
        assert table.equals(alone)
        assert table.schema.equals(alone.schema, check_metadata=True)


def test_manifests_decoded_together_convert_from_their_shared_rows(tmp_path: Path) -> None:
    """Manifests decoded as one file are converted from its rows, not copied into one.

    The tables are the same as alone: in their order, a subset, or another order.
    """
    alone = [r.manifest_file for r in _three_manifests(tmp_path)]
    raws = read_manifests_avro(FileIO(), alone)
    assert all(isinstance(r, RawManifest) for r in raws)
    read = [r for r in raws if isinstance(r, RawManifest)]
    assert read[0].merged is not None
    assert all(r.merged is read[0].merged for r in read)  # one merged decode
    assert [r.start for r in read] == [0, 3, 5]
    (batch,) = manifest_batches(read, SCHEMA, SPEC, 3)
    assert batch.table.column("file_path").num_chunks == 1
    for order in ([0, 1, 2], [2, 0, 1], [0, 2], [1]):
        picked = [read[i] for i in order]
        for i, table in zip(order, manifest_tables(picked, SCHEMA, SPEC, 3), strict=True):
            want = read_manifest_arrow(FileIO(), alone[i], SCHEMA, SPEC, 3)
            assert table.equals(want)
            assert table.schema.equals(want.schema, check_metadata=True)


@pytest.mark.parametrize("decoder", ["datafusion", "polars"])
def test_manifests_read_without_metrics_are_the_same_but_for_the_maps(
    tmp_path: Path, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``metrics=False`` leaves the six maps out of the decode, and changes nothing else.

    Decoded together and alone, by DataFusion (which skips them) or polars (which drops
    them): every other column is the full decode's, and each map column is null.
    """
    import icecore.avro

    monkeypatch.setattr(icecore.avro, "_datafusion_worth_it", lambda _: decoder == "datafusion")
    alone = [r.manifest_file for r in _three_manifests(tmp_path)]
    for picked in (alone, alone[1:2]):  # together (one merged decode), and one alone
        full = read_manifests_avro(FileIO(), picked)
        slim = read_manifests_avro(FileIO(), picked, metrics=False)
        assert all(isinstance(r, RawManifest) for r in full + slim)
        for f, s in zip(full, slim, strict=True):
            assert isinstance(f, RawManifest) and isinstance(s, RawManifest)
            left = s.table.column("data_file").type
            assert {c.name for c in left} == {
                c.name for c in f.table.column("data_file").type
            } - set(MAP_COLUMNS)
            got = manifest_tables([s], SCHEMA, SPEC, 3)[0]
            want = manifest_tables([f], SCHEMA, SPEC, 3)[0]
            assert got.schema.equals(want.schema, check_metadata=True)
            for name in got.column_names:
                if name in MAP_COLUMNS:
                    assert got.column(name).null_count == got.num_rows, name
                else:
                    assert got.column(name).equals(want.column(name)), name
            # the test's manifests write these two maps: the full decode has them
            for name in ("null_value_counts", "lower_bounds"):
                assert want.column(name).null_count == 0, name


def test_a_bad_manifest_converted_with_others_is_the_one_named(tmp_path: Path) -> None:
    """The error is the one reading that manifest alone gives, for the first bad one."""
    raws = _three_manifests(tmp_path)
    bad = replace(raws[1], manifest_file=replace(raws[1].manifest_file, added_files_count=5))
    short = replace(bad, length=bad.length - 1)  # the list's length and counts disagree
    with pytest.raises(InvalidMetadata, match="m2.avro is .* truncated or was replaced"):
        manifest_tables([raws[0], short, raws[2]], SCHEMA, SPEC, 3)
    other_spec = replace(raws[2], manifest_file=replace(raws[2].manifest_file, partition_spec_id=1))
    with pytest.raises(InvalidMetadata, match="m2.avro is"):
        manifest_tables([raws[0], short, other_spec], SCHEMA, SPEC, 3)
    with pytest.raises(InvalidMetadata, match="m3.avro was written with partition spec 1"):
        manifest_tables([raws[0], raws[1], other_spec], SCHEMA, SPEC, 3)

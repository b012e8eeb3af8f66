"""Figure builders are pure: the figure's data equals the numbers they were given."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from icecore.layout import metadata_tree
from icecore.metadata import Snapshot, parse_metadata
from icecore.timeline import timeline
from tests.icecore.fakes import files as fake_files
from tests.icecore.fakes import manifest_file
from ui import figures

GOLDEN = Path(__file__).resolve().parents[1] / "data/metadata/spark/trips-00024.metadata.json"


def test_timeline_draws_each_snapshot_once_on_its_lane_with_its_rows() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    tl = timeline(metadata)
    fig = figures.timeline_figure(tl, selected=tl.points[0].snapshot_id)
    drawn = {}
    for trace in fig.data:
        if trace.type == "scatter" and trace.name in {p.operation for p in tl.points}:
            for custom, lane, size in zip(
                trace.customdata, trace.y, trace.marker.size, strict=True
            ):
                drawn[custom[0]] = (lane, size)
    assert drawn == {
        str(p.snapshot_id): (p.lane, figures.marker_size(p.added_records)) for p in tl.points
    }
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    assert list(bars[figures.RECORDS_ADDED].y) == [p.added_records or 0 for p in tl.points]
    assert list(bars[figures.RECORDS_REMOVED].y) == [-(p.removed_records or 0) for p in tl.points]
    tags = next(t for t in fig.data if t.name == "tag")
    assert [c[0] for c in tags.customdata] == [str(m.snapshot_id) for m in tl.markers]
    lanes = fig.layout.yaxis.categoryarray
    assert list(lanes) == [lane.name for lane in reversed(tl.lanes)]
    ring = next(t for t in fig.data if t.name == "selected")
    assert len(ring.x) == 2  # the current snapshot and the selected one


def test_tree_figure_values_are_the_nodes_bytes_or_rows() -> None:
    layout = fake_files(
        [(100, 10), (200, 20), (300, 30)], contents=[0, 0, 1], partitions=["a", "b", "c"]
    )
    snapshot = Snapshot(snapshot_id=1, timestamp_ms=0, manifest_list="list")
    tree = metadata_tree(snapshot, [manifest_file()], layout)
    by_bytes = figures.tree_figure(tree, kind="icicle", size_by="bytes", color_by="content")
    (trace,) = by_bytes.data
    assert trace.type == "icicle"
    assert list(trace.values) == [n.bytes for n in tree.nodes]
    # The figure's ids are short; each tile's parent is the tile of its node's parent.
    position = {n.id: i for i, n in enumerate(tree.nodes)}
    assert list(trace.parents) == [
        trace.ids[position[n.parent]] if n.parent else "" for n in tree.nodes
    ]
    assert list(trace.labels) == [n.label for n in tree.nodes]
    colors = dict(zip((n.id for n in tree.nodes), trace.marker.colors, strict=True))
    assert colors["m/f0"] == colors["m/f1"] == figures.CONTENT_COLORS["data"]
    assert colors["m/f2"] == figures.CONTENT_COLORS["position deletes"]
    (trace,) = figures.tree_figure(tree, kind="treemap", size_by="rows", color_by="partition").data
    assert trace.type == "treemap"
    assert list(trace.values) == [n.rows for n in tree.nodes]
    partition_colors = dict(zip((n.id for n in tree.nodes), trace.marker.colors, strict=True))
    assert len({partition_colors[f] for f in ("m/f0", "m/f1", "m/f2")}) == 3


COUNTS = {
    "data_manifests": 10,
    "data_manifests_pruned": 4,
    "delete_manifests": 2,
    "delete_manifests_pruned": 1,
    "data_files": 100,
    "files_pruned_by_manifest": 40,
    "files_pruned_by_partition": 30,
    "files_pruned_by_metrics": 20,
    "data_files_planned": 10,
    "rows": 1000,
    "rows_planned": 120,
    "delete_files": 5,
    "delete_files_applied": 2,
}


def test_the_funnel_stages_subtract_each_levels_pruning() -> None:
    stages = figures.funnel_stages(COUNTS, matching_rows=77)
    assert [v for _, v in stages["Manifests"]] == [10, 6]
    assert [v for _, v in stages["Data files"]] == [100, 60, 30, 10]
    assert [v for _, v in stages["Rows"]] == [1000, 120, 77]
    fig = figures.funnel_figure(stages)
    assert [list(t.x) for t in fig.data] == [[10, 6], [100, 60, 30, 10], [1000, 120, 77]]
    without = figures.funnel_stages(COUNTS)
    assert [v for _, v in without["Rows"]] == [1000, 120]


def test_the_diff_figure_draws_removals_left_and_additions_right() -> None:
    counts = {
        "data files added": 3,
        "data files removed": 2,
        "delete files added": 1,
        "delete files removed": 0,
        "rows added": 30,
        "rows removed": 20,
    }
    fig = figures.diff_figure(counts)
    bars = {t.name: list(t.x) for t in fig.data}
    assert bars == {
        "added": [3, 1],
        "removed": [-2, -0],
        "rows added": [30],
        "rows removed": [-20],
    }


def test_an_empty_table_draws_empty_figures() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    empty = dataclasses.replace(metadata, snapshots=(), refs={}, current_snapshot_id=None)
    fig = figures.timeline_figure(timeline(empty))
    assert all(len(t.x or ()) == 0 for t in fig.data)


def test_more_snapshots_than_markers_are_drawn_as_bins_with_tags_exact() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    tl = timeline(metadata)
    fig = figures.timeline_figure(tl, max_markers=len(tl.points) - 1)
    operations = {p.operation for p in tl.points}
    assert not [t for t in fig.data if t.name in operations]  # no marker per snapshot
    bins = [
        (lane, int(c[1]), int(c[2]))
        for t in fig.data
        if str(t.name).startswith("mostly ")
        for c, lane in zip(t.customdata, t.y, strict=True)
    ]
    assert all(c[0] == figures.BIN for t in fig.data if str(t.name).startswith("mostly ")
               for c in t.customdata)  # fmt: skip
    counted = [
        p for p in tl.points for lane, s, e in bins if p.lane == lane and s <= p.timestamp_ms < e
    ]
    assert sorted(p.snapshot_id for p in counted) == sorted(p.snapshot_id for p in tl.points)
    tags = next(t for t in fig.data if t.name == "tag")
    assert [c[0] for c in tags.customdata] == [str(m.snapshot_id) for m in tl.markers]
    added = next(t for t in fig.data if t.name == figures.RECORDS_ADDED)
    assert sum(added.y) == sum(p.added_records or 0 for p in tl.points)
    window = (tl.points[2].timestamp_ms, tl.points[5].timestamp_ms)
    few = figures.timeline_figure(tl, window=window, max_markers=len(tl.points) - 1)
    drawn = {c[0] for t in few.data if t.name in operations for c in t.customdata}
    assert drawn == {
        str(p.snapshot_id) for p in tl.points if window[0] <= p.timestamp_ms <= window[1]
    }


def test_a_branch_without_snapshots_of_its_own_marks_its_head_on_its_lane() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    main = metadata.refs["main"]
    refs = {**metadata.refs, "release": dataclasses.replace(main)}  # a branch at main's head
    tl = timeline(dataclasses.replace(metadata, refs=refs))
    for max_markers in (len(tl.points), 1):  # markers, then bins
        fig = figures.timeline_figure(tl, max_markers=max_markers)
        heads = next(t for t in fig.data if t.name == "branch head")
        assert list(heads.y) == ["release"]
        assert [c[0] for c in heads.customdata] == [str(main.snapshot_id)]

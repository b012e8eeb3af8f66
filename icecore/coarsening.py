"""A coarser partition spec for a table whose partitions are too small for its file size.

When a partition holds less than a target file's worth of data, no compaction can make its
files big: only a coarser spec can (spec "Partition Evolution": new data is written with the
new spec, old files keep theirs). :func:`propose` looks at the live data files of the default
spec and coarsens it a step at a time (``hour`` to ``day`` to ``month`` to ``year``; a
bucket, truncate or identity field dropped), each time taking the step after which the
median partition holds the most bytes, until the median partition would hold at least
``min_bytes`` or only one field is left. Partitions after a step are counted from the
partition labels of the files (:func:`icecore.layout.partition_label`), so a proposal costs
no read of data.

The changes are the lines ``icecore evolve TABLE --spec-change ...`` takes
(:mod:`icecore.evolution.change_text`), to be previewed (``--dry-run``) before committing.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icecore.metadata import TableMetadata
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.transforms.base import Transform
from icecore.transforms.temporal import DayTransform, HourTransform, MonthTransform, YearTransform

_COARSER = {"hour": "day", "day": "month", "month": "year"}
_TIME: dict[type[Transform], str] = {
    HourTransform: "hour",
    DayTransform: "day",
    MonthTransform: "month",
    YearTransform: "year",
}
_DROPPED = "(dropped)"


def parse_label(spec: PartitionSpec, label: str) -> tuple[str, ...] | None:
    """The field values of a partition label (``a=1/b=x``), in spec order; None if not one.

    Each value runs to the next ``/NAME=`` of the spec's next field, so values holding ``/``
    or ``=`` read back whole.
    """
    names = [pf.name for pf in spec.fields]
    parts = label.split("/")
    # The common case, in one split: no value holds a "/", so each part is NAME=VALUE
    # (what the walk below finds too; ~5x faster, one call per partition of a table).
    if len(parts) == len(names) and all(
        p.startswith(f"{n}=") for n, p in zip(names, parts, strict=True)
    ):
        return tuple(p[len(n) + 1 :] for n, p in zip(names, parts, strict=True))
    values = []
    position = 0
    for i, name in enumerate(names):
        prefix = f"{name}="
        if not label.startswith(prefix, position):
            return None
        start = position + len(prefix)
        if i + 1 < len(names):
            end = label.find(f"/{names[i + 1]}=", start)
            if end < 0:
                return None
            position = end + 1
        else:
            end = len(label)
        values.append(label[start:end])
    return tuple(values)


def parse_labels(spec: PartitionSpec, labels: Sequence[str]) -> list[tuple[str, ...] | None]:
    """:func:`parse_label` of each label, in order (the same answers).

    A table's labels usually all split on ``/`` into one ``NAME=VALUE`` part per field: then
    they are cut column by column, ~10x faster than a call per label (a catalog's health
    parses every partition label of every table); otherwise each is parsed alone.
    """
    prefixes = [f"{pf.name}=" for pf in spec.fields]
    split = [label.split("/") for label in labels]
    if split and all(len(parts) == len(prefixes) for parts in split):
        columns = list(zip(*split, strict=True))
        if all(
            all(v.startswith(prefix) for v in column)
            for column, prefix in zip(columns, prefixes, strict=True)
        ):
            cut = [
                [v[len(prefix) :] for v in column]
                for column, prefix in zip(columns, prefixes, strict=True)
            ]
            return list(zip(*cut, strict=True))
    return [parse_label(spec, label) for label in labels]


def _coarser_value(value: str, unit: str) -> str:
    """A time partition's human value one unit coarser (``2024-08-01-13`` to ``2024-08-01``)."""
    if value == "null":
        return value
    return value.rsplit("-", 1)[0] if unit in _COARSER else value


@dataclass(frozen=True, slots=True)
class Coarsening:
    """A coarser spec proposed for the default spec.

    Attributes:
        steps: each step in words (``pickup_ts_hour: hour to day``, ``drop vendor_id``).
        changes: the ``--spec-change`` lines that make it.
        partitions_before, partitions_after: partitions of the default spec's live files
            now, and with the coarser spec.
        median_bytes_before, median_bytes_after: the median partition's bytes, likewise.
    """

    steps: tuple[str, ...]
    changes: tuple[str, ...]
    partitions_before: int
    partitions_after: int
    median_bytes_before: float
    median_bytes_after: float


def _state(pf: PartitionField) -> str:
    return _TIME.get(type(pf.transform), str(pf.transform))


def _grouped(
    rows: Mapping[tuple[str, ...], int], states: Sequence[str]
) -> dict[tuple[str, ...], int]:
    """Bytes per partition once each field is in ``states`` (dropped fields left out)."""
    found: dict[tuple[str, ...], int] = {}
    for values, size in rows.items():
        key = tuple(v for v, s in zip(values, states, strict=True) if s != _DROPPED)
        found[key] = found.get(key, 0) + size
    return found


def propose(
    metadata: TableMetadata, bytes_by_label: Mapping[str, int], min_bytes: float
) -> Coarsening | None:
    """A coarser default spec whose median partition holds about ``min_bytes`` or more.

    Args:
        metadata: the table (its default spec and current schema name the changes).
        bytes_by_label: live data bytes per partition label of the default spec.
        min_bytes: the partition size to reach (75% of the target file size).

    Returns:
        None when the default spec is unpartitioned, its labels do not parse, or no step
        makes the median partition bigger.
    """
    spec = metadata.default_spec()
    fields = [pf for pf in spec.fields if not pf.transform.is_void]
    if not fields or not bytes_by_label or len(fields) != len(spec.fields):
        return None
    rows: dict[tuple[str, ...], int] = {}
    parsed = parse_labels(spec, list(bytes_by_label))
    for values, size in zip(parsed, bytes_by_label.values(), strict=True):
        if values is None:
            return None
        rows[values] = rows.get(values, 0) + size
    states = [_state(pf) for pf in fields]
    before = _grouped(rows, states)
    median_before = statistics.median(before.values())
    median = median_before
    steps: list[str] = []
    while median < min_bytes:
        best: tuple[float, list[str], dict[tuple[str, ...], int], str] | None = None
        alive = [i for i, s in enumerate(states) if s != _DROPPED]
        for i in alive:
            if states[i] in _COARSER:
                unit = _COARSER[states[i]]
                step = f"{fields[i].name}: {states[i]} to {unit}"
                moved: dict[tuple[str, ...], int] = {}
                for k, size in rows.items():
                    key = (*k[:i], _coarser_value(k[i], states[i]), *k[i + 1 :])
                    moved[key] = moved.get(key, 0) + size
                trial_rows, trial_states = moved, [*states[:i], unit, *states[i + 1 :]]
            elif len(alive) > 1:
                step = f"drop {fields[i].name} ({states[i]})"
                trial_rows, trial_states = rows, [*states[:i], _DROPPED, *states[i + 1 :]]
            else:
                continue
            grouped = _grouped(trial_rows, trial_states)
            trial = statistics.median(grouped.values())
            if best is None or trial > best[0]:
                best = (trial, trial_states, trial_rows, step)
        if best is None or best[0] <= median:
            break
        median, states, rows, step = best
        steps.append(step)
    if not steps:
        return None
    after = _grouped(rows, states)
    return Coarsening(
        tuple(steps),
        _changes(metadata, fields, states),
        len(before),
        len(after),
        float(median_before),
        float(statistics.median(after.values())),
    )


def _changes(
    metadata: TableMetadata, fields: Sequence[PartitionField], states: Sequence[str]
) -> tuple[str, ...]:
    """``--spec-change`` lines from the default spec's fields to their new states."""
    schema = metadata.current_schema()
    lines: list[str] = []
    for pf, state in zip(fields, states, strict=True):
        if state == _state(pf):
            continue
        lines.append(f"remove_field {pf.name}")
        if state != _DROPPED:
            column = schema.find_column_name(pf.source_id) or str(pf.source_id)
            lines.append(f"add_field {column} {state}")
    return tuple(lines)


__all__ = ["Coarsening", "parse_label", "parse_labels", "propose"]

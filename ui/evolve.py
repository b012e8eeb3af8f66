"""Evolution changes as the Evolution page's forms build them: staged, dry-run, committed.

No Streamlit here. A :class:`Change` names one call of icecore's evolution builders
(PyIceberg's names: ``add_column``, ``add_field``, ``set``...), so the page decides nothing
about Iceberg itself: every rule is checked by the builders, and every id, line and diff
shown comes from their :class:`~icecore.evolution.Preview`. :func:`stage` makes one
transaction of the changes, grouped as the CLI's ``evolve`` groups them (schema, then
partition spec, sort order, properties), so a partition field may use a column added by the
same commit.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore import describe
from icecore.diff import FieldChange, schema_changes
from icecore.errors import ValidationError
from icecore.evolution import Transaction
from icecore.evolution.change_text import SCHEMA_VERBS, SPEC_VERBS
from icecore.evolution.spec import default_partition_name, resolve_transform
from icecore.metadata.builder import check_promotion
from icecore.schema import Schema
from icecore.table import Table
from icecore.types import (
    DecimalType,
    DoubleType,
    IcebergType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StructType,
)
from ui.views import field_row

if TYPE_CHECKING:
    from icecore.whatif import WhatIf

SCHEMA = "schema"
SPEC = "spec"
SORT = "sort"
PROPERTIES = "properties"
ORDER = "order"
"""The one sort-order verb: the whole new order (the order given last replaces the others)."""

VERBS: dict[str, tuple[str, ...]] = {
    SCHEMA: SCHEMA_VERBS,
    SPEC: SPEC_VERBS,
    SORT: (ORDER,),
    PROPERTIES: ("set", "remove"),
}
"""The builder methods a change of each kind may call."""

TRANSFORMS = ("identity", "bucket[N]", "truncate[W]", "year", "month", "day", "hour", "void")
"""Partition and sort transforms as the spec writes them (N and W filled in by the form)."""

SortTerm = tuple[str, str, str, str]
"""One sort field: (column, transform, ``asc``/``desc``, ``nulls-first``/``nulls-last``)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One builder call: ``verb(*args, **options)`` on the builder of ``kind``.

    A sort-order change is the whole new order: ``Change(SORT, ORDER, (term, ...))`` with
    :data:`SortTerm` items, none for unsorted.
    """

    kind: str
    verb: str
    args: tuple[Any, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()

    def text(self) -> str:
        """The change in one line, in the words of the CLI's change text."""
        if self.verb == ORDER:
            terms = [" ".join(_word(part) for part in term) for term in self.args]
            return "sort order: " + (", ".join(terms) or "unsorted")
        words = [self.verb, *(_word(a) for a in self.args)]
        words += [f"{key}={_word(value)}" for key, value in self.options]
        return shlex.join(words)


def _word(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ".".join(str(part) for part in value)
    return str(value)


# Staging ----------------------------------------------------------------------------------


def stage(table: Table, changes: Sequence[Change]) -> Transaction:
    """The changes staged into one transaction on ``table`` as loaded; nothing is written.

    Raises:
        ValidationError: a change breaks a rule (the builders' sentence, naming it).
    """
    transaction = table.transaction()
    builders: dict[str, Callable[[], Any]] = {
        SCHEMA: transaction.update_schema,
        SPEC: transaction.update_spec,
        SORT: transaction.update_sort_order,
        PROPERTIES: transaction.update_properties,
    }
    for kind, make in builders.items():
        mine = [c for c in changes if c.kind == kind]
        if not mine:
            continue
        if kind == SORT:
            mine = mine[-1:]
        builder = make()
        for change in mine:
            _apply(builder, change)
        builder.commit()
    return transaction


def _apply(builder: Any, change: Change) -> None:
    if change.verb not in VERBS.get(change.kind, ()):
        raise ValidationError(f"Unknown {change.kind} change {change.verb!r}.")
    if change.verb != ORDER:
        getattr(builder, change.verb)(*change.args, **dict(change.options))
        return
    for column, transform, direction, null_order in change.args:
        if direction not in ("asc", "desc"):
            raise ValidationError(f"Sort direction {direction!r} is neither asc nor desc.")
        getattr(builder, direction)(column, transform, null_order)


# Dry run and commit -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DryRun:
    """What committing the changes would write, as the page shows it.

    Attributes:
        base_location: the metadata file the dry run was computed against (and a commit
            would replace).
        changes: one readable line per effect (icecore's words).
        diff: the unified diff of the metadata JSON.
        ids: schema, partition spec and sort order ids, now and after the commit.
        schema: the schema after the commit as tree rows, each with what changes in it;
            dropped fields follow as rows of their own.
        is_noop: whether the commit would change nothing.
    """

    base_location: str
    changes: tuple[str, ...]
    diff: str
    ids: list[dict[str, Any]]
    schema: list[dict[str, Any]]
    is_noop: bool


def dry_run(table: Table, changes: Sequence[Change]) -> DryRun:
    """Preview the changes against ``table`` as loaded; writes nothing.

    Raises:
        ValidationError: a change breaks a rule.
    """
    preview = stage(table, changes).preview()
    before, after = preview.base, preview.metadata
    ids = [
        {"": "schema id", "now": before.current_schema_id, "after": after.current_schema_id},
        {"": "partition spec id", "now": before.default_spec_id, "after": after.default_spec_id},
        {
            "": "sort order id",
            "now": before.default_sort_order_id,
            "after": after.default_sort_order_id,
        },
    ]
    return DryRun(
        base_location=preview.metadata_location,
        changes=preview.changes,
        diff=preview.diff(),
        ids=ids,
        schema=schema_rows(before.current_schema(), after.current_schema()),
        is_noop=preview.is_noop,
    )


def what_if(table: Table, changes: Sequence[Change], filters: Sequence[str]) -> WhatIf:
    """What each filter would read after a rewrite into the layout these changes make.

    The layout is the dry run's own (the same staged builders); see :mod:`icecore.whatif`.
    """
    from icecore.whatif import layout_of
    from icecore.whatif import what_if as estimate

    return estimate(table, layout_of(stage(table, changes).preview().metadata), filters)


@dataclass(frozen=True, slots=True)
class Committed:
    """A landed commit: where the table now is, and what it changed.

    Attributes:
        table: the table's name.
        metadata_location: the new metadata file; ``previous_location`` the one it replaced.
        schema_id, spec_id, sort_order_id: the current ids after the commit.
        changes: the change lines of the dry run it was made from.
    """

    table: str
    metadata_location: str
    previous_location: str
    schema_id: int
    spec_id: int
    sort_order_id: int
    changes: tuple[str, ...]


def commit(table: Table, changes: Sequence[Change]) -> Committed:
    """Commit the changes, computed against ``table`` as loaded (the version the user saw).

    Raises:
        ValidationError: a change breaks a rule.
        CommitConflict: another writer changed what the changes depend on (one sentence
            saying what it committed); nothing was written.
        CommitStateUnknown: the catalog could not say whether the swap happened.
    """
    transaction = stage(table, changes)
    lines = transaction.preview().changes
    landed = transaction.commit()
    md = landed.metadata
    return Committed(
        table=str(table.identifier),
        metadata_location=landed.metadata_location,
        previous_location=table.metadata_location,
        schema_id=md.current_schema_id,
        spec_id=md.default_spec_id,
        sort_order_id=md.default_sort_order_id,
        changes=lines,
    )


def commit_refusal(table: Table) -> str | None:
    """Why the table cannot take commits at all, or None when its catalog can swap."""
    if table.catalog is None or not table.catalog.can_commit:
        return (
            f"{table.identifier} was opened from a bare metadata file, which has no catalog "
            "pointer to swap: the dry run is all this page can do. Open the table through "
            "its catalog or its table folder to commit."
        )
    return None


# What the schema looks like after the change ------------------------------------------------


def _change_text(change: FieldChange) -> str:
    if change.kind == "renamed":
        return f"renamed from {change.before.rsplit('.', 1)[-1]}"
    if change.kind in ("added", "removed"):
        return change.kind
    if change.before or change.after:
        return f"{change.kind}: {change.before or '—'} → {change.after or '—'}"
    return change.kind


def schema_rows(before: Schema, after: Schema) -> list[dict[str, Any]]:
    """The new schema as the Overview's tree rows plus a ``change`` column; dropped fields last."""
    notes: dict[int, list[str]] = {}
    for change in schema_changes(before, after):
        notes.setdefault(change.field_id, []).append(_change_text(change))
    kept = [(row, None) for row in describe.schema_rows(after)]
    gone = [row for row in describe.schema_rows(before) if row.field_id not in after.field_ids]
    dropped = [(row, row.path) for row in gone]
    return [
        {"change": "; ".join(notes.get(row.field_id, ())), **field_row(row, label)}
        for row, label in (*kept, *dropped)
    ]


# Choices a form offers --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One field of a schema, as a form offers it.

    Attributes:
        path: the dotted full name (``pickup_loc.lat``, ``tags.element``).
        parts: the names along the path (a name may itself hold a dot).
        parent: the path of the struct, list or map holding it ("" at top level).
        depth: 0 at top level.
        fixed: it is a list's element or a map's key or value (its name cannot change).
        in_collection: it sits inside a list or a map (no partition or sort source).
        field: the field itself.
    """

    path: str
    parts: tuple[str, ...]
    parent: str
    depth: int
    fixed: bool
    in_collection: bool
    field: NestedField

    @property
    def name(self) -> str:
        """The field's own name."""
        return self.field.name

    @property
    def field_id(self) -> int:
        """The field id."""
        return self.field.field_id

    @property
    def field_type(self) -> IcebergType:
        """The field's type."""
        return self.field.field_type

    @property
    def required(self) -> bool:
        """Whether values may not be null."""
        return self.field.required

    @property
    def doc(self) -> str:
        """The doc ("" when none)."""
        return self.field.doc or ""

    @property
    def is_primitive(self) -> bool:
        """Whether the type is primitive (not a struct, list or map)."""
        return self.field.field_type.is_primitive

    @property
    def is_struct(self) -> bool:
        """Whether new columns can be added inside it."""
        return isinstance(self.field.field_type, StructType)


def columns(schema: Schema) -> list[Column]:
    """Every field of ``schema``, parents before children."""

    def walk(
        fields: Sequence[NestedField], above: tuple[str, ...], fixed: bool, inside: bool
    ) -> Iterator[Column]:
        for f in fields:
            parts = (*above, f.name)
            yield Column(".".join(parts), parts, ".".join(above), len(above), fixed, inside, f)
            t = f.field_type
            if isinstance(t, StructType):
                yield from walk(t.fields, parts, False, inside)
            elif isinstance(t, ListType | MapType):
                yield from walk(t.child_fields(), parts, True, True)

    return list(walk(schema.fields, (), False, False))


def widenings(field_type: IcebergType) -> list[str]:
    """The types a column of ``field_type`` may become (icecore's promotion rule decides)."""
    candidates: list[IcebergType] = [LongType(), DoubleType()]
    if isinstance(field_type, DecimalType):
        candidates += [
            DecimalType(p, field_type.scale) for p in range(field_type.precision + 1, 39)
        ]
    wider = []
    for candidate in candidates:
        if candidate == field_type:
            continue
        try:
            check_promotion("", field_type, candidate)
        except ValidationError:
            continue
        wider.append(str(candidate))
    return wider


def partition_name(source: str, transform: str) -> str | None:
    """The name a new partition field gets when none is given (Iceberg Java's), if valid."""
    try:
        return default_partition_name(resolve_transform(transform), source)
    except ValidationError:
        return None


__all__ = [
    "ORDER",
    "PROPERTIES",
    "SCHEMA",
    "SORT",
    "SPEC",
    "TRANSFORMS",
    "VERBS",
    "Change",
    "Column",
    "Committed",
    "DryRun",
    "SortTerm",
    "columns",
    "commit",
    "commit_refusal",
    "dry_run",
    "partition_name",
    "schema_rows",
    "stage",
    "widenings",
]

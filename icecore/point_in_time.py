"""One point in time of a table: a frozen value, resolved once into the snapshot and schema read.

Users name a point in three ways (spec "Snapshots", "Snapshot References"): a snapshot id, a
branch or tag, or a time (Iceberg Java's ``SnapshotUtil.snapshotIdAsOfTime``: the last entry
of ``main``'s ``snapshot-log`` at or before it). :class:`At` holds exactly one of them, or
none for the current snapshot, checked when it is made; the entry points users know
(``t.scan(snapshot_id=..., ref=..., as_of=...)``, the CLI's ``--snapshot/--ref/--as-of``, the
app's ``snapshot=``/``ref=``/``as_of=`` link parameters) build it once, and everything below
them takes it instead of the three loose arguments.

:meth:`At.resolve` answers "which snapshot, read with which schema" in one place, as Spark
reads (Iceberg Java's ``SnapshotUtil.schemaFor``): a snapshot id, a tag and a time read with
the snapshot's own ``schema-id``; a branch and the current table read with the table's
current schema, which their next write uses. The answer, :class:`Resolved`, is what features
pass down once it is known; its :attr:`Resolved.key` names the read, so two spellings of one
read (the ref ``main`` and the current table) share what is cached for it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Container
from dataclasses import dataclass
from typing import Protocol

from icecore.errors import NotFound, ValidationError
from icecore.history import parse_timestamp_ms, snapshot_as_of
from icecore.metadata import Snapshot, TableMetadata
from icecore.schema import Schema
from icecore.values import whole_number

__all__ = ["CURRENT", "At", "HasMetadata", "Point", "PointKey", "Resolved", "point_of"]

_SEVERAL = "Choose one of a snapshot id, a ref or a time, not several."


class HasMetadata(Protocol):
    """What resolving a point reads of a table: its metadata (a ``TableData`` has it)."""

    @property
    def metadata(self) -> TableMetadata:
        """The table's parsed metadata.json."""
        ...


@dataclass(frozen=True, slots=True)
class At:
    """A point in time of a table: a snapshot id, a ref, a time, or (none given) the current one.

    Frozen and hashable, so it can key a cache; two spellings of one time (``...Z`` and
    ``...+00:00``) are the same value, since the time is kept in milliseconds.

    Attributes:
        snapshot_id: read this snapshot (a positive id, as Iceberg writers make them).
        ref: ... or the snapshot this branch or tag points at.
        as_of_ms: ... or the snapshot current on ``main`` at this time (ms from the epoch).

    Raises:
        ValidationError: several are given, a negative snapshot id, an empty ref name.
    """

    snapshot_id: int | None = None
    ref: str | None = None
    as_of_ms: int | None = None

    def __post_init__(self) -> None:
        given = [v for v in (self.snapshot_id, self.ref, self.as_of_ms) if v is not None]
        if len(given) > 1:
            raise ValidationError(_SEVERAL)
        if self.snapshot_id is not None:
            if isinstance(self.snapshot_id, bool) or not isinstance(self.snapshot_id, int):
                raise ValidationError(
                    f"Snapshot id {self.snapshot_id!r} is not a whole number; ids are."
                )
            if self.snapshot_id < 0:
                raise ValidationError(
                    f"Snapshot id {self.snapshot_id} is negative; snapshot ids are positive."
                )
        if self.ref is not None and (not isinstance(self.ref, str) or not self.ref.strip()):
            raise ValidationError(f"Ref {self.ref!r} is not a branch or tag name; name one.")
        if self.as_of_ms is not None and (
            isinstance(self.as_of_ms, bool) or not isinstance(self.as_of_ms, int)
        ):
            raise ValidationError(f"Time {self.as_of_ms!r} is not milliseconds from the epoch.")

    @classmethod
    def of(
        cls,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
    ) -> At:
        """The point the public keywords name; ``as_of`` is ISO-8601 text, a datetime or ms.

        A time without an offset is UTC (:func:`icecore.history.parse_timestamp_ms`).

        Raises:
            ValidationError: several are given (checked before the time is read), a
                negative snapshot id, an empty ref name, or a time that is not ISO-8601.
        """
        if sum(v is not None for v in (snapshot_id, ref, as_of)) > 1:
            raise ValidationError(_SEVERAL)
        as_of_ms = parse_timestamp_ms(as_of) if as_of is not None else None
        return cls(snapshot_id=snapshot_id, ref=ref, as_of_ms=as_of_ms)

    @classmethod
    def guess(cls, text: str | int, refs: Container[str]) -> At:
        """The point what a user typed in one box names: a snapshot id, a ref, else a time.

        A whole number is a snapshot id, a name among ``refs`` is that ref, and anything
        else must be an ISO-8601 time.

        Raises:
            ValidationError: a negative number, or text that is none of the three.
        """
        number = text if isinstance(text, int) else whole_number(text)
        if number is not None:
            return cls(snapshot_id=number)
        if isinstance(text, str) and text in refs:
            return cls(ref=text)
        return cls.of(as_of=text)

    @property
    def is_current(self) -> bool:
        """Whether this is the current snapshot (nothing named)."""
        return self.snapshot_id is None and self.ref is None and self.as_of_ms is None

    def resolve(self, table: HasMetadata) -> Resolved:
        """The snapshot this point reads in ``table``, and the schema it reads with.

        Raises:
            NotFound: the snapshot, ref or time does not exist in the table (an unknown id,
                a ref pointing at an expired snapshot, a time before the first snapshot).
        """
        metadata = table.metadata
        if self.snapshot_id is not None:
            snapshot = metadata.snapshot_by_id(self.snapshot_id)
            if snapshot is None:
                raise NotFound(
                    f"Snapshot {self.snapshot_id} does not exist in the table (never, or expired)."
                )
            return Resolved(self, snapshot, snapshot_schema(metadata, snapshot), False)
        if self.ref is not None:
            found = metadata.ref(self.ref)
            if found is None:
                known = ", ".join(sorted(metadata.refs)) or "none"
                raise NotFound(
                    f"The table has no branch or tag named {self.ref!r} (it has: {known})."
                )
            snapshot = metadata.snapshot_by_id(found.snapshot_id)
            if snapshot is None:
                raise NotFound(
                    f"Ref {self.ref!r} points at snapshot {found.snapshot_id}, which is gone."
                )
            if found.is_branch:
                return Resolved(self, snapshot, metadata.current_schema(), True)
            return Resolved(self, snapshot, snapshot_schema(metadata, snapshot), False)
        if self.as_of_ms is not None:
            snapshot = snapshot_as_of(metadata, self.as_of_ms)
            return Resolved(self, snapshot, snapshot_schema(metadata, snapshot), False)
        return Resolved(self, metadata.current_snapshot(), metadata.current_schema(), True)

    def __str__(self) -> str:
        """The point in words, for messages."""
        if self.snapshot_id is not None:
            return f"snapshot {self.snapshot_id}"
        if self.ref is not None:
            return f"ref {self.ref}"
        if self.as_of_ms is not None:
            when = dt.datetime.fromtimestamp(self.as_of_ms / 1000, tz=dt.UTC)
            return f"as of {when.isoformat(timespec='milliseconds')}"
        return "the current snapshot"


CURRENT = At()
"""The current snapshot, read with the current schema."""


def snapshot_schema(metadata: TableMetadata, snapshot: Snapshot | None) -> Schema:
    """The schema a read of ``snapshot`` by id uses: its ``schema-id``, else the current one.

    A writer that recorded no ``schema-id`` (optional in v1), a schema since removed, or no
    snapshot at all read with the current schema, as Iceberg Java does.
    """
    if snapshot is None or snapshot.schema_id is None:
        return metadata.current_schema()
    return metadata.schema_by_id(snapshot.schema_id) or metadata.current_schema()


PointKey = tuple[int | None, int, bool]
"""``(snapshot id, schema id, reads as a branch)``: what a read of a point depends on."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """A point resolved in one table version: the snapshot read and the schema it is read with.

    It belongs to the table version it was resolved in; pass it down with that table so no
    feature resolves the point again.

    Attributes:
        at: the point as named.
        snapshot: the snapshot read (None: a table without snapshots, read as empty).
        schema: the schema the read uses (Iceberg Java's ``SnapshotUtil.schemaFor``).
        reads_branch: the point is a branch or the current table, which read (and next
            write) with the table's current schema, partition spec and sort order; a tag, a
            snapshot id or a time reads the snapshot as it was.
    """

    at: At
    snapshot: Snapshot | None
    schema: Schema
    reads_branch: bool

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot's id (None for a table without snapshots)."""
        return self.snapshot.snapshot_id if self.snapshot is not None else None

    @property
    def key(self) -> PointKey:
        """What the read depends on, hashable: equal for two names of one read.

        The ref ``main`` and the current table, or a tag and the id of its snapshot, give one
        key; a branch and a tag at one snapshot do not when the schema has changed since.
        """
        return (self.snapshot_id, self.schema.schema_id, self.reads_branch)

    def resolve(self, table: HasMetadata) -> Resolved:
        """Itself: already resolved (so a feature takes either an :class:`At` or this)."""
        return self


Point = At | Resolved
"""What a feature takes: a point to resolve, or one resolved already by its caller."""


def point_of(
    at: Point | None = None,
    *,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: str | int | dt.datetime | None = None,
) -> Point:
    """The point a public entry point's keywords name: ``at``, or the triple, never both.

    Raises:
        ValidationError: ``at`` and one of the others, or as :meth:`At.of`.
    """
    if at is None:
        return At.of(snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    if snapshot_id is not None or ref is not None or as_of is not None:
        raise ValidationError(_SEVERAL)
    return at

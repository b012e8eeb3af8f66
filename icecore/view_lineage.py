"""Which tables and views a view reads, and which views read a table (one catalog).

Issue 35 and DESIGN.md "Views": a view's SQL is text in some dialect (view-spec.md
"Representations"); the relations it names are found by parsing that text with sqlglot in
the representation's dialect, never by matching words. An unqualified name is resolved with
the version's ``default-namespace`` (view-spec.md "Versions": "Namespace to use when
resolving unqualified identifiers"); a three-part name is this catalog's when its catalog
part is the version's ``default-catalog`` or a name the catalog itself goes by (a SQL
catalog's ``catalog_name``, which is the name Spark's JdbcCatalog was registered under: Spark
writes its *session's* current catalog as ``default-catalog`` and the SQL as typed, so a view
created from another catalog names its own catalog explicitly), and another catalog's
otherwise. Each name is then looked up in the view's catalog: a table, a view, or missing (a
view whose SQL names a dropped table still loads; the page shows the reference as missing).

Bounded: the SQL parsed is at most :data:`MAX_SQL_CHARS` per representation (a view's
text comes from whoever wrote the view), and a text that does not parse in its dialect says
so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from icecore.catalog.base import TableIdentifier
from icecore.catalog.views import View
from icecore.errors import IcecoreError, NotFound
from icecore.expressions.parser import referenced_tables
from icecore.metadata.view import ViewVersion
from icecore.schema import schema_to_json

MAX_SQL_CHARS = 200_000
"""The longest view SQL parsed for its references (longer: the references are not listed)."""

MAX_VIEWS_SCANNED = 2_000
"""The most views of a catalog read to find those that read a table (past it: a note)."""

TABLE, VIEW, MISSING, ELSEWHERE = "table", "view", "missing", "other catalog"


@dataclass(frozen=True, slots=True)
class Reference:
    """One relation a view's SQL names, resolved.

    Attributes:
        name: ``ns.name`` (with the catalog part first when it is another catalog's).
        kind: ``table``, ``view``, ``missing`` (not in this catalog now) or ``other catalog``.
        dialects: the representations whose SQL names it.
    """

    name: str
    kind: str
    dialects: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ViewReads:
    """What a view version reads, and what could not be read from its SQL.

    Attributes:
        references: every relation named by any SQL representation, sorted by name.
        unparsed: ``(dialect, reason)`` of each representation whose SQL was not parsed.
    """

    references: tuple[Reference, ...]
    unparsed: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        """The names alone, as ``icecore view`` prints ``reads``."""
        return [r.name for r in self.references]


def version_reads(
    version: ViewVersion, kind_of: Any = None, own_names: Iterable[str] = ()
) -> ViewReads:
    """The relations ``version``'s SQL names, resolved (see the module docstring).

    Args:
        version: a view version (its representations, default namespace and catalog).
        kind_of: ``kind_of(TableIdentifier) -> str`` (``table``, ``view`` or ``missing``);
            None: not looked up (every in-catalog name's kind is then ``missing``).
        own_names: the names the view's catalog goes by (besides ``default-catalog``).
    """
    seen: dict[str, tuple[str, list[str]]] = {}
    unparsed: list[tuple[str, str]] = []
    own = {n.lower() for n in (*own_names, version.default_catalog or "") if n}
    for rep in version.representations:
        if rep.type != "sql":
            continue
        if len(rep.sql) > MAX_SQL_CHARS:
            unparsed.append((rep.dialect, f"its SQL is longer than {MAX_SQL_CHARS:,} characters"))
            continue
        refs = referenced_tables(rep.sql, rep.dialect)
        if refs is None:
            unparsed.append((rep.dialect, f"its {rep.dialect} SQL is not one query that parses"))
            continue
        for parts in refs:
            catalog = parts[0] if len(parts) >= 3 else None
            namespace, name = tuple(parts[1:-1] if catalog else parts[:-1]), parts[-1]
            elsewhere = catalog is not None and catalog.lower() not in own
            ident = TableIdentifier(namespace or version.default_namespace, name)
            key = f"{catalog}.{ident}" if elsewhere else str(ident)
            if key not in seen:
                kind = ELSEWHERE if elsewhere else (kind_of(ident) if kind_of else MISSING)
                seen[key] = (kind, [])
            if rep.dialect not in seen[key][1]:
                seen[key][1].append(rep.dialect)
    references = tuple(Reference(k, kind, tuple(d)) for k, (kind, d) in sorted(seen.items()))
    return ViewReads(references, tuple(unparsed))


def kind_in(catalog: Any) -> Any:
    """A ``kind_of`` for :func:`version_reads` over ``catalog``'s tables and views.

    The catalog's listings are read once (a name is looked up, not loaded): a table or view
    the session may not list reads as missing, which says nothing about its existence.
    """
    try:
        tables = {str(t).lower() for t in catalog.list_tables()}
    except IcecoreError:
        tables = set()
    try:
        views = {str(v).lower() for v in catalog.list_views()}
    except (IcecoreError, AttributeError):
        views = set()

    def kind_of(ident: TableIdentifier) -> str:
        key = str(ident).lower()
        return TABLE if key in tables else VIEW if key in views else MISSING

    return kind_of


def own_names(catalog: Any) -> tuple[str, ...]:
    """The names ``catalog`` goes by in engines' SQL.

    A SQL catalog's ``catalog_name`` (the name Spark's JdbcCatalog was registered under) and
    the name icecore.toml gives it (``config_name``), where it has them.
    """
    names = (getattr(catalog, "catalog_name", None), getattr(catalog, "config_name", None))
    return tuple(n for n in names if isinstance(n, str) and n)


def view_reads(view: View, catalog: Any = None) -> ViewReads:
    """What the view's current version reads, looked up in ``catalog`` when given."""
    if catalog is None:
        return version_reads(view.metadata.current_version)
    return version_reads(view.metadata.current_version, kind_in(catalog), own_names(catalog))


@dataclass(frozen=True, slots=True)
class Readers:
    """The views of a catalog whose current SQL names a relation.

    Attributes:
        views: their names, sorted.
        unreadable: views that could not be loaded or parsed (named, with why), not guessed.
        scanned_all: False when the catalog held more than :data:`MAX_VIEWS_SCANNED` views.
    """

    views: tuple[str, ...]
    unreadable: tuple[tuple[str, str], ...]
    scanned_all: bool


def views_reading(
    catalog: Any, identifier: TableIdentifier, names: Sequence[TableIdentifier] | None = None
) -> Readers:
    """The views of ``catalog`` whose current version reads ``identifier`` (lineage).

    Args:
        catalog: an Icecore catalog (``list_views``, ``load_view``).
        identifier: the table or view read.
        names: the views to look at (default: every view the catalog lists).
    """
    listed = list(catalog.list_views() if names is None else names)
    wanted = str(identifier).lower()
    found: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for ident in listed[:MAX_VIEWS_SCANNED]:
        try:
            view = catalog.load_view(ident)
        except (IcecoreError, NotFound) as e:
            unreadable.append((str(ident), str(e)))
            continue
        reads = version_reads(view.metadata.current_version, None, own_names(catalog))
        if any(r.kind != ELSEWHERE and r.name.lower() == wanted for r in reads.references):
            found.append(str(ident))
        elif reads.unparsed and not reads.references:
            unreadable.append((str(ident), reads.unparsed[0][1]))
    return Readers(tuple(sorted(found)), tuple(unreadable), len(listed) <= MAX_VIEWS_SCANNED)


def view_summary(view: View) -> dict[str, Any]:
    """One row of ``icecore views`` (DESIGN.md "Views")."""
    version = view.metadata.current_version
    return {
        "view": str(view.identifier),
        "current_version_id": view.metadata.current_version_id,
        "dialects": sorted({r.dialect for r in version.representations if r.type == "sql"}),
        "versions": len(view.metadata.versions),
        "metadata_location": view.metadata_location,
    }


def view_detail(view: View, catalog: Any = None) -> dict[str, Any]:
    """``icecore view``'s answer (DESIGN.md "Views"): versions, schema, reads, properties.

    Beyond DESIGN.md's shape: ``read_kinds`` (table, view, missing, other catalog) and
    ``missing`` (a view naming a dropped table still loads and says so), ``unparsed``.
    """
    md = view.metadata
    reads = view_reads(view, catalog)
    schema = md.current_schema
    return {
        "view": str(view.identifier),
        "view_uuid": md.view_uuid,
        "location": md.location,
        "metadata_location": view.metadata_location,
        "current_version_id": md.current_version_id,
        "versions": [_version_json(v) for v in sorted(md.versions, key=lambda v: v.version_id)],
        "version_log": [
            {"timestamp_ms": e.timestamp_ms, "version_id": e.version_id} for e in md.version_log
        ],
        "schema": schema_to_json(schema) if schema is not None else None,
        "reads": reads.names,
        "read_kinds": {r.name: r.kind for r in reads.references},
        "missing": [r.name for r in reads.references if r.kind == MISSING],
        "unparsed": [{"dialect": d, "reason": why} for d, why in reads.unparsed],
        "properties": dict(md.properties),
    }


def _version_json(version: ViewVersion) -> dict[str, Any]:
    return {
        "version_id": version.version_id,
        "timestamp_ms": version.timestamp_ms,
        "schema_id": version.schema_id,
        "summary": dict(version.summary),
        "default_catalog": version.default_catalog,
        "default_namespace": list(version.default_namespace),
        "representations": [
            {"dialect": r.dialect, "sql": r.sql} for r in version.representations if r.type == "sql"
        ],
    }


def all_views(catalog: Any, names: Iterable[TableIdentifier] | None = None) -> list[View]:
    """Every listed view of ``catalog``, loaded (those that fail to load are skipped)."""
    out: list[View] = []
    for ident in catalog.list_views() if names is None else names:
        try:
            out.append(catalog.load_view(ident))
        except IcecoreError:
            continue
    return out


__all__ = [
    "MAX_SQL_CHARS",
    "Readers",
    "Reference",
    "ViewReads",
    "all_views",
    "kind_in",
    "own_names",
    "version_reads",
    "view_detail",
    "view_reads",
    "view_summary",
    "views_reading",
]

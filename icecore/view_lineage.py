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
from icecore.metadata.view import ViewVersion

MAX_SQL_CHARS = 200_000
"""The longest view SQL parsed for its references (longer: the references are not listed)."""

MAX_VIEWS_SCANNED = 2_000
"""The most views of a catalog read to find those that read a table (past it: a note)."""

_DIALECTS = {
    "spark": "spark",
    "spark-sql": "spark",
    "hive": "hive",
    "trino": "trino",
    "presto": "presto",
    "athena": "athena",
    "duckdb": "duckdb",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "postgres": "postgres",
    "postgresql": "postgres",
    "mysql": "mysql",
    "databricks": "databricks",
    "dremio": "dremio",
    "redshift": "redshift",
    "flink": "spark",
    "impala": "hive",
    "starrocks": "starrocks",
    "doris": "doris",
    "clickhouse": "clickhouse",
    "oracle": "oracle",
    "tsql": "tsql",
}
"""Iceberg dialect names (as engines write them) -> sqlglot's reader; others read as ANSI."""

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
        references: every relation named by any SQL representation, in first-seen order.
        unparsed: ``(dialect, reason)`` of each representation whose SQL was not parsed.
    """

    references: tuple[Reference, ...]
    unparsed: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        """The names alone, as ``icecore view`` prints ``reads``."""
        return [r.name for r in self.references]


def _parse(sql: str, dialect: str) -> Any:
    """The statement's syntax tree (sqlglot imported here: ~0.1 s, only when asked)."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        trees = [t for t in sqlglot.parse(sql, read=_DIALECTS.get(dialect.lower())) if t]
    except (ParseError, TokenError, RecursionError, ValueError) as e:
        raise ValueError(f"its {dialect} SQL does not parse ({str(e).splitlines()[0]})") from e
    if len(trees) != 1:
        raise ValueError(f"its {dialect} SQL holds {len(trees)} statements, not one")
    return trees[0]


def _named_relations(tree: Any) -> list[tuple[str | None, tuple[str, ...], str]]:
    """``(catalog, namespace, name)`` of every table a statement reads (CTEs excluded)."""
    from sqlglot import exp

    ctes = {str(c.alias_or_name).lower() for c in tree.find_all(exp.CTE)}
    found: list[tuple[str | None, tuple[str, ...], str]] = []
    for node in tree.find_all(exp.Table):
        if not isinstance(node.this, exp.Identifier):
            continue  # a table function (range(10), VALUES ...): nothing of the catalog
        name = str(node.name)
        parts = [str(p.name) for p in node.parts][:-1]
        if not parts and name.lower() in ctes:
            continue
        catalog = parts[0] if len(parts) >= 2 else None
        namespace = tuple(parts[1:] if len(parts) >= 2 else parts)
        found.append((catalog, namespace, name))
    return found


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
        try:
            relations = _named_relations(_parse(rep.sql, rep.dialect))
        except ValueError as e:
            unparsed.append((rep.dialect, str(e)))
            continue
        for catalog, namespace, name in relations:
            elsewhere = catalog is not None and catalog.lower() not in own
            ident = TableIdentifier(namespace or version.default_namespace, name)
            key = f"{catalog}.{ident}" if elsewhere else str(ident)
            if key not in seen:
                kind = ELSEWHERE if elsewhere else (kind_of(ident) if kind_of else MISSING)
                seen[key] = (kind, [])
            if rep.dialect not in seen[key][1]:
                seen[key][1].append(rep.dialect)
    references = tuple(Reference(k, kind, tuple(d)) for k, (kind, d) in seen.items())
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
    """The names ``catalog`` goes by in engines' SQL (a SQL catalog's ``catalog_name``)."""
    name = getattr(catalog, "catalog_name", None)
    return (name,) if isinstance(name, str) and name else ()


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
    """``icecore view``'s answer (DESIGN.md "Views"): versions, schema, reads, properties."""
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
        "schema": _schema_json(schema),
        "reads": reads.names,
        "read_kinds": {r.name: r.kind for r in reads.references},
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


def _schema_json(schema: Any) -> list[dict[str, Any]] | None:
    if schema is None:
        return None
    return [
        {"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
        for f in schema.fields
    ]


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

"""A catalog as one principal sees it: grants enforced and every change audited.

The app (a signed-in user), the REST server (a request's bearer) and the CLI (the OS user)
open their catalogs through :func:`guard`. What it enforces, it enforces where the action
happens rather than in the pages: a table the principal has no grant on is not listed and
cannot be loaded (the refusal reads the same whether or not the table exists, so it reveals
nothing); a commit needs the owner role; the features that read row values ask
:func:`icecore.table_data.access_of` for the reader role and the masks. Every commit writes an
intent to the catalog's audit log before the swap and its outcome after (DESIGN.md "Identity,
roles and audit"; :mod:`icecore.audit`).

Only what the :class:`~icecore.catalog.base.Catalog` protocol names passes through (an
allow-list); the wrapped catalog stays reachable as :attr:`GuardedCatalog.inner` for the
REST server's administration, which checks :meth:`GuardedCatalog.require` itself.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from icecore.access import FULL_ACCESS, Access, Policy, Principal, Role
from icecore.audit import MAX_SUMMARY_CHARS, AuditEvent, AuditSink, Result, new_event_id, now_iso
from icecore.catalog.base import Catalog, TableIdentifier
from icecore.catalog.views import View
from icecore.errors import CommitConflict, CommitStateUnknown, Forbidden, IcecoreError
from icecore.evolution.commit import UpdateCommitter
from icecore.io import FileIO
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder
from icecore.metadata.requirements import Requirement
from icecore.metadata.updates import MetadataUpdate
from icecore.table import Table, load_table_at
from icecore.table_data import TableData, read_table_metadata

log = logging.getLogger(__name__)

MAX_TABLE_CHARS = 1_000
"""Longest table name an audit event records (a refused name may come from a URL)."""


class GuardedCatalog:
    """``inner`` seen by ``principal`` under ``policy`` (None: no grants, full access).

    Attributes:
        inner: the catalog itself.
        principal: who is acting.
        policy: the deployment's grants, or None where there are none (a workstation, the
            CLI: then only the audit applies).
        name: the catalog's name as grants spell it (``CATALOG::ns.table``).
        audit: where changes are recorded, or None (a catalog that keeps no log).
        source: ``app``, ``rest`` or ``cli``, as the audit log says where a change came from.
    """

    def __init__(
        self,
        inner: Catalog,
        principal: Principal,
        policy: Policy | None,
        *,
        name: str,
        audit: AuditSink | None = None,
        source: str = "app",
    ) -> None:
        self.inner = inner
        self.principal = principal
        self.policy = policy
        self.name = name
        self.audit = audit
        self.source = source

    # -- what the Catalog protocol names, passed through -------------------------------------

    @property
    def io(self) -> FileIO:
        """The wrapped catalog's FileIO."""
        return self.inner.io

    @property
    def kind(self) -> str:
        """The wrapped catalog's type."""
        return self.inner.kind

    @property
    def can_commit(self) -> bool:
        """Whether the wrapped catalog can commit (the role is checked per table)."""
        return self.inner.can_commit

    @property
    def hadoop_layout(self) -> bool:
        """The wrapped catalog's layout."""
        return self.inner.hadoop_layout

    @property
    def loads_whole_tables(self) -> bool:
        """As the wrapped catalog."""
        return self.inner.loads_whole_tables

    @property
    def warehouse_root(self) -> str | None:
        """As the wrapped catalog."""
        return self.inner.warehouse_root

    @property
    def uri(self) -> str:
        """The string that opens the wrapped catalog again."""
        return self.inner.uri

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """How Iceberg Java opens the wrapped catalog (for jobs the owner role launched)."""
        return self.inner.iceberg_catalog()

    # -- what the principal may see ------------------------------------------------------------

    def access(self, identifier: TableIdentifier) -> Access:
        """The principal's access to ``identifier``: full without a policy, else its grants."""
        if self.policy is None:
            return FULL_ACCESS
        return self.policy.access(self.principal, self.name, _dotted(identifier))

    def require(
        self,
        identifier: TableIdentifier,
        role: Role,
        action: str,
        *,
        audit_action: str | None = None,
    ) -> Access:
        """The principal's access to ``identifier``, if it includes ``role``.

        Args:
            identifier: the table.
            role: the role the action needs.
            action: the action as the refusal says it (``commit a change``).
            audit_action: the action as the audit log names it (``commit``, ``drop``, ...),
                so that a refused attempt files under the same action as a done one;
                default ``action``.

        Raises:
            Forbidden: it does not (recorded in the audit log as refused when ``role`` is
                owner or admin: a refused change is a change someone attempted).
        """
        access = self.access(identifier)
        try:
            access.require(role, action, str(identifier))
        except Forbidden as e:
            if role >= Role.OWNER:
                # A log that cannot be written (a read-only catalog) changes no refusal.
                with contextlib.suppress(IcecoreError):
                    self._refused(audit_action or action, _dotted(identifier), str(e))
            raise
        return access

    def namespace_role(self, namespace: tuple[str, ...]) -> Role:
        """The principal's role over a whole namespace (creating tables in it needs admin)."""
        if self.policy is None:
            return Role.ADMIN
        return self.policy.namespace_role(self.principal, self.name, ".".join(namespace))

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """The tables of ``namespace`` the principal may see (no grant: not listed)."""
        tables = self.inner.list_tables(namespace)
        if self.policy is None:
            return tables
        return [t for t in tables if self.access(t).role > Role.NONE]

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """The views of ``namespace`` the principal may see (grants match views as tables)."""
        views = self.inner.list_views(namespace)
        if self.policy is None:
            return views
        return [v for v in views if self.access(v).role > Role.NONE]

    def load_view(self, identifier: str | TableIdentifier) -> View:
        """A view the principal may see."""
        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else TableIdentifier.parse(identifier)
        )
        self.require(ident, Role.VIEWER, "see its metadata")
        return self.inner.load_view(ident)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Namespaces holding a table the principal may see, or reached by a grant's glob.

        And the namespaces above those (a visible name already shows them), so that a tree of
        namespaces can be walked down to what the principal may see.
        """
        namespaces = self.inner.list_namespaces()
        if self.policy is None:
            return namespaces
        seen = {t.namespace for t in self.list_tables()}
        seen |= {ns for ns in namespaces if self.namespace_role(ns) > Role.NONE}
        shown = {ns[:n] for ns in seen for n in range(1, len(ns) + 1)}
        return [ns for ns in namespaces if ns in shown]

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """The current metadata.json of a table the principal may see."""
        self.require(identifier, Role.VIEWER, "see its metadata")
        return self.inner.metadata_location(identifier)

    def load_table(self, identifier: str | TableIdentifier) -> Table:
        """A table the principal may see, loaded so that its features ask this catalog."""
        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else TableIdentifier.parse(identifier)
        )
        self.require(ident, Role.VIEWER, "see its metadata")
        if self.inner.loads_whole_tables:
            # kept as loaded (its FileIO holds what the server vended), bound to this guard
            return self.bind(self.inner.load_table(ident))
        return load_table_at(ident, self.inner.metadata_location(ident), self.io, catalog=self)

    def bind(self, table: TableData) -> Table:
        """``table`` (a version of a table the principal may see) bound to this guard.

        Its refreshes, commits and row reads then ask this catalog again. Whatever the wrapped
        catalog hands back (a REST ``loadTable``, a commit's result) is bound here: a table
        bound to :attr:`inner` would commit without a check or a record. A table cached for
        every session (loaded through :attr:`inner`) is bound per session the same way, never
        shared bound to another session's guard.

        Raises:
            Forbidden: the principal may not see the table.
        """
        self.require(table.identifier, Role.VIEWER, "see its metadata")
        return Table(table.identifier, table.metadata, table.metadata_location, table.io, self)

    # -- changes ----------------------------------------------------------------------------

    def commit_metadata(
        self,
        identifier: TableIdentifier,
        base_location: str,
        metadata: TableMetadata,
        payload: bytes,
    ) -> str:
        """Swap in the next metadata file if the principal owns the table; audited.

        Raises:
            Forbidden: the principal is not an owner of the table (recorded as refused).
            CommitConflict, CommitStateUnknown, Unsupported: as the wrapped catalog's.
        """
        self.require(identifier, Role.OWNER, "commit a change", audit_action="commit")
        table = _dotted(identifier)
        before = self._metadata_before(base_location)
        event_id = self._intent("commit", table, base_location, change_summary(before, metadata))
        try:
            location = self.inner.commit_metadata(identifier, base_location, metadata, payload)
        except CommitStateUnknown:
            raise  # the intent stays without an outcome: unknown, as it is
        except CommitConflict as e:
            self._outcome(event_id, "commit", table, "conflict", base_location, None, str(e))
            raise
        except Exception as e:  # an interrupt (not an Exception) leaves the intent: unknown
            self._outcome(event_id, "commit", table, "failed", base_location, None, _why(e))
            raise
        self._outcome(event_id, "commit", table, "committed", base_location, location, "")
        return location

    def record_intent(self, action: str, table: str, before: str | None, summary: str) -> str:
        """Write an intent for a change made outside :meth:`commit_metadata`; its event id.

        The REST server's create/drop/rename/register/purge and the maintenance jobs record
        through this and :meth:`record_outcome`, so every change is written the same way.
        """
        return self._intent(action, table, before, summary)

    def record_outcome(
        self,
        event_id: str,
        action: str,
        table: str,
        result: Result,
        before: str | None = None,
        after: str | None = None,
        summary: str = "",
    ) -> None:
        """Write the outcome of an intent recorded with :meth:`record_intent`."""
        self._outcome(event_id, action, table, result, before, after, summary)

    def _metadata_before(self, location: str) -> TableMetadata | None:
        if self.audit is None:
            return None
        try:
            return read_table_metadata(self.io, location)
        except IcecoreError:
            return None

    def _event(
        self,
        event_id: str,
        phase: str,
        action: str,
        table: str,
        result: Result,
        before: str | None,
        after: str | None,
        summary: str,
    ) -> AuditEvent:
        return AuditEvent(
            id=event_id,
            phase="intent" if phase == "intent" else "outcome",
            time=now_iso(),
            principal=self.principal.display,
            subject=self.principal.subject,
            source=self.source,
            action=action,
            catalog=self.name,
            table=table[:MAX_TABLE_CHARS],
            result=result,
            metadata_before=before,
            metadata_after=after,
            summary=summary[:MAX_SUMMARY_CHARS],
        )

    def _intent(self, action: str, table: str, before: str | None, summary: str) -> str:
        event_id = new_event_id()
        if self.audit is not None:
            self.audit.append(
                self._event(event_id, "intent", action, table, "started", before, None, summary)
            )
        return event_id

    def _outcome(
        self,
        event_id: str,
        action: str,
        table: str,
        result: Result,
        before: str | None,
        after: str | None,
        summary: str,
    ) -> None:
        """Write an outcome; a log that cannot be written then is reported, never raised.

        The intent was written before the change, so a lost outcome reads as ``unknown``;
        raising here would turn a change that committed (or a refusal, a conflict) into
        another error, and a caller retrying a committed change would make it twice.
        """
        if self.audit is None:
            return
        try:
            self.audit.append(
                self._event(event_id, "outcome", action, table, result, before, after, summary)
            )
        except Exception as e:
            log.warning(
                "The audit log of %s could not record the %s outcome of %s on %s (%s); its "
                "intent %s reads as unknown.",
                self.name,
                result,
                action,
                table[:MAX_TABLE_CHARS],
                _why(e),
                event_id,
            )

    def _refused(self, action: str, table: str, why: str) -> None:
        self._outcome(new_event_id(), action, table, "refused", None, None, why)


class GuardedUpdateCatalog(GuardedCatalog):
    """A guarded catalog that commits updates, not files (a REST catalog): same rules.

    The evolution and ref operations hand such a catalog their requirements and updates
    (:class:`~icecore.evolution.commit.UpdateCommitter`); without this door they would reach
    :meth:`GuardedCatalog.commit_metadata`, which a REST catalog refuses.
    """

    def commit_table(
        self,
        fresh: TableData,
        requirements: Sequence[Requirement],
        updates: Sequence[MetadataUpdate],
    ) -> TableData:
        """Send the commit if the principal owns the table; audited; the result bound here.

        Raises:
            Forbidden: the principal is not an owner of the table (recorded as refused).
            CommitConflict, CommitStateUnknown, IcecoreError: as the wrapped catalog's.
        """
        inner = self.inner
        assert isinstance(inner, UpdateCommitter)
        ident = fresh.identifier
        self.require(ident, Role.OWNER, "commit a change", audit_action="commit")
        table = _dotted(ident)
        before = fresh.metadata_location
        try:
            expected: TableMetadata | None = (
                MetadataBuilder(fresh.metadata).apply_all(updates).build(previous_location=before)
            )
        except IcecoreError:
            expected = None  # the commit path validated them; the server decides
        summary = change_summary(fresh.metadata, expected) if expected is not None else ""
        event_id = self._intent("commit", table, before, summary)
        try:
            committed = inner.commit_table(fresh, requirements, updates)
        except CommitStateUnknown:
            raise
        except CommitConflict as e:
            self._outcome(event_id, "commit", table, "conflict", before, None, str(e))
            raise
        except Exception as e:
            self._outcome(event_id, "commit", table, "failed", before, None, _why(e))
            raise
        self._outcome(
            event_id, "commit", table, "committed", before, committed.metadata_location, ""
        )
        return self.bind(committed)


class GuardedAtomicCatalog(GuardedCatalog):
    """A guarded catalog that can swap several tables at once (a SQL catalog): same rules.

    It answers ``commit_metadata_all`` as the wrapped catalog does (the REST server's
    ``CommitTransactionRequest`` asks for it by name), through :func:`commit_all`.
    """

    def commit_metadata_all(
        self, commits: Sequence[tuple[TableIdentifier, str, TableMetadata, bytes]]
    ) -> list[str]:
        """Every swap or none, if the principal owns every table; each one audited.

        Raises:
            Forbidden: the principal does not own one of the tables (nothing is written).
            CommitConflict, CommitStateUnknown: as the wrapped catalog's.
        """
        return commit_all(self, commits)


def _dotted(identifier: TableIdentifier) -> str:
    return ".".join((*identifier.namespace, identifier.name))


def _why(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}"[:500]


def change_summary(before: TableMetadata | None, after: TableMetadata) -> str:
    """What a commit changes, in a few lines: snapshots, schema, spec, sort order, refs, properties.

    Read from the metadata before and after, so every commit is summarized the same way
    whichever feature made it.
    """
    if before is None:
        return f"new metadata (format v{after.format_version})"
    lines: list[str] = []
    old_snaps = {s.snapshot_id for s in before.snapshots}
    added = [s for s in after.snapshots if s.snapshot_id not in old_snaps]
    removed = old_snaps - {s.snapshot_id for s in after.snapshots}
    for snap in added:
        lines.append(f"snapshot {snap.snapshot_id} added ({snap.operation or '?'})")
    if removed:
        lines.append(f"{len(removed)} snapshot(s) expired")
    if after.current_schema_id != before.current_schema_id:
        old_cols = {f.name for f in before.current_schema().fields}
        new_cols = {f.name for f in after.current_schema().fields}
        diff = [f"+{c}" for c in sorted(new_cols - old_cols)]
        diff += [f"-{c}" for c in sorted(old_cols - new_cols)]
        lines.append(
            f"schema {before.current_schema_id} -> {after.current_schema_id}"
            + (f" ({', '.join(diff)})" if diff else "")
        )
    if after.default_spec_id != before.default_spec_id:
        lines.append(f"partition spec {before.default_spec_id} -> {after.default_spec_id}")
    if after.default_sort_order_id != before.default_sort_order_id:
        lines.append(f"sort order {before.default_sort_order_id} -> {after.default_sort_order_id}")
    for name in sorted(set(before.refs) | set(after.refs)):
        old, new = before.refs.get(name), after.refs.get(name)
        if old is None and new is not None:
            lines.append(f"{new.type.value} {name} created at {new.snapshot_id}")
        elif new is None and old is not None:
            lines.append(f"{old.type.value} {name} dropped")
        elif old is not None and new is not None and old.snapshot_id != new.snapshot_id:
            lines.append(f"{new.type.value} {name}: {old.snapshot_id} -> {new.snapshot_id}")
        elif old is not None and new is not None and old != new:
            lines.append(f"{new.type.value} {name}: retention changed")
    props_old, props_new = dict(before.properties), dict(after.properties)
    changed = sorted(
        k for k in set(props_old) | set(props_new) if props_old.get(k) != props_new.get(k)
    )
    if changed:
        lines.append("properties: " + ", ".join(changed))
    return "\n".join(lines) or "metadata rewritten"


def guard(
    catalog: Catalog,
    principal: Principal,
    policy: Policy | None,
    *,
    name: str,
    audit: AuditSink | None = None,
    source: str = "app",
) -> GuardedCatalog:
    """``catalog`` as ``principal`` sees it (see the module).

    A catalog that commits updates rather than files (the REST catalog,
    :class:`~icecore.evolution.commit.UpdateCommitter`) is guarded by
    :class:`GuardedUpdateCatalog`, which checks and records those commits too; one that
    commits several tables at once (the SQL catalogs) by :class:`GuardedAtomicCatalog`.
    """
    kind: type[GuardedCatalog] = GuardedCatalog
    if isinstance(catalog, UpdateCommitter):
        kind = GuardedUpdateCatalog
    elif callable(getattr(catalog, "commit_metadata_all", None)):
        kind = GuardedAtomicCatalog
    return kind(catalog, principal, policy, name=name, audit=audit, source=source)


def commit_all(
    catalog: GuardedCatalog, commits: Sequence[tuple[TableIdentifier, str, TableMetadata, bytes]]
) -> list[str]:
    """Several tables' swaps at once (a REST transaction), each checked and audited.

    Raises:
        Forbidden: the principal does not own one of the tables (nothing is written).
        Unsupported: the wrapped catalog has no multi-table commit.
    """
    from icecore.errors import Unsupported

    for identifier, *_ in commits:
        catalog.require(identifier, Role.OWNER, "commit a change", audit_action="commit")
    inner_all = getattr(catalog.inner, "commit_metadata_all", None)
    if not callable(inner_all):
        raise Unsupported(f"The catalog {catalog.name} cannot commit several tables at once.")
    ids = [
        catalog.record_intent(
            "commit",
            _dotted(ident),
            base,
            change_summary(catalog._metadata_before(base), md),
        )
        for ident, base, md, _ in commits
    ]
    try:
        locations: list[str] = inner_all(commits)
    except CommitStateUnknown:
        raise
    except CommitConflict as e:
        for event_id, (ident, base, _, _) in zip(ids, commits, strict=True):
            catalog.record_outcome(
                event_id, "commit", _dotted(ident), "conflict", base, None, str(e)
            )
        raise
    except Exception as e:
        for event_id, (ident, base, _, _) in zip(ids, commits, strict=True):
            catalog.record_outcome(
                event_id, "commit", _dotted(ident), "failed", base, None, _why(e)
            )
        raise
    for event_id, (ident, base, _, _), location in zip(ids, commits, locations, strict=True):
        catalog.record_outcome(event_id, "commit", _dotted(ident), "committed", base, location)
    return locations


__all__ = [
    "GuardedAtomicCatalog",
    "GuardedCatalog",
    "GuardedUpdateCatalog",
    "change_summary",
    "commit_all",
    "guard",
]

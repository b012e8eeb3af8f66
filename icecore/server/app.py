"""The Iceberg REST catalog protocol, served over any catalog Icecore opens (starlette).

Routes follow the REST catalog OpenAPI spec (``open-api/rest-catalog-open-api.yaml`` in
apache/iceberg) with an empty prefix: ``GET /v1/config`` lists the endpoints served, then
namespaces, tables, commits, rename, register, multi-table transactions
(``/v1/transactions/commit``, listed only where the backing catalog commits several tables
in one transaction: the SQL catalogs) and, with a credential, ``/v1/oauth/tokens``.
A namespace in a path is its levels joined by the unit separator (``%1F``), the spec's
default. Every answer that is not a success is the spec's ``ErrorModel``
(:mod:`icecore.server.errors`).

Untrusted input stays bounded: a request body over :data:`MAX_BODY_BYTES` is refused with
413 before it is read whole, page sizes are capped, and catalog work runs in a worker thread
so one slow request does not stall the others. ``read_only`` refuses every write with 403.
Every storage path a request names (a location, a write path, a file a commit or register
references) must lie below the served locations (:mod:`icecore.server.locations`, 403).
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from icecore.access import Policy, Principal, Role
from icecore.audit import AuditSink, new_event_id
from icecore.catalog.base import Catalog, TableIdentifier
from icecore.catalog.guarded import GuardedCatalog, commit_all, guard
from icecore.catalog.report_store import (
    MAX_REPORT_BYTES,
    RESERVED_PREFIX,
    InvalidReport,
    KeptReport,
    ReportStore,
    ReportsUnavailable,
    validate_report,
)
from icecore.errors import CommitConflict, CommitStateUnknown, Forbidden, IcecoreError, NotFound
from icecore.failpoints import failpoint
from icecore.identifier import check_new_identifier, check_new_namespace, check_no_case_twin
from icecore.metadata.builder import encode_metadata
from icecore.metadata.requirements import AssertCreate, Requirement
from icecore.metadata.serde import serialize_metadata
from icecore.metadata.updates import MetadataUpdate
from icecore.metadata.updates_json import updates_to_json
from icecore.server.auth import OAuthError, TokenIssuer
from icecore.server.backend import Backend
from icecore.server.commit import (
    PATH_PROPERTIES,
    TableChange,
    apply_rest_updates,
    commit_table,
    commit_transaction,
    parse_commit,
    require_transactions,
    supports_transactions,
)
from icecore.server.create import new_table_metadata
from icecore.server.errors import (
    RestError,
    bad_request,
    error_response,
    from_icecore,
    no_such_namespace,
    no_such_table,
    plain_text,
)
from icecore.server.locations import ServedLocations
from icecore.server.planning import PlanningRoutes
from icecore.server.principals import ANONYMOUS, Authenticator, TokenVerifier
from icecore.server.vend import DELEGATION_HEADER, wants_vended
from icecore.server.views import ViewRoutes
from icecore.table_data import read_table_metadata
from icecore.values import whole_number

log = logging.getLogger("icecore.server")

MAX_BODY_BYTES = 8 * 1024 * 1024
"""Largest request body accepted (a commit with many updates stays far below)."""

MAX_PAGE_SIZE = 1000
NAMESPACE_SEPARATOR = "\x1f"

Handler = Callable[["Call"], Any]


@dataclass(frozen=True)
class Call:
    """One request as handlers see it: path parameters, query, the parsed JSON body."""

    params: Mapping[str, str]
    query: Mapping[str, str]
    body: Any
    vend: bool = False
    """The client asked for vended credentials (``X-Iceberg-Access-Delegation``)."""
    principal: Principal = ANONYMOUS
    """Who sent it (:mod:`icecore.server.principals`)."""


@dataclass(frozen=True)
class Endpoint:
    """A served route: method, path, handler, and whether it writes."""

    method: str
    path: str
    handler: Handler
    writes: bool = False
    advertised: bool = True
    """Listed by ``GET /v1/config``; False where the backing catalog cannot do it (it
    answers 406 then), so clients do not try."""
    max_body_bytes: int | None = None
    """A tighter bound on its request body than the server's (413 above)."""

    @property
    def spec_name(self) -> str:
        """How ``GET /v1/config`` lists it (``{prefix}`` in the spec's spelling)."""
        path = self.path.replace("/v1/", "/v1/{prefix}/", 1).replace("{plan_id}", "{plan-id}")
        return f"{self.method} {path}"


def namespace_of(text: str) -> tuple[str, ...]:
    """A path's namespace: levels joined by the unit separator; 400 if empty."""
    parts = tuple(text.split(NAMESPACE_SEPARATOR))
    if not text or any(not p for p in parts):
        raise bad_request(f"Invalid namespace {text[:200]!r}.")
    return parts


def _namespace_list(value: Any, what: str) -> tuple[str, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v and "." not in v for v in value)
    ):
        raise bad_request(f"{what} must be a non-empty list of names without dots.")
    return tuple(value)


def _identifier(value: Any, what: str) -> TableIdentifier:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        raise bad_request(f"{what} must be an object with 'namespace' and 'name'.")
    return TableIdentifier(
        _namespace_list(value.get("namespace"), f"{what}'s namespace"), value["name"]
    )


def _page_token(key: list[str]) -> str:
    """The ``next-page-token`` after the item keyed ``key``: its key, encoded."""
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def _after_token(token: str) -> list[str]:
    """The key a ``pageToken`` of :func:`_page_token` carries; 400 for any other token."""
    try:
        key = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, UnicodeDecodeError, RecursionError):
        key = None
    if not isinstance(key, list) or not key or not all(isinstance(k, str) for k in key):
        raise bad_request("Invalid pageToken: pass back the next-page-token of the last page.")
    return key


def _page(
    items: list[Any], query: Mapping[str, str], key: Callable[[Any], list[str]]
) -> tuple[list[Any], str | None]:
    """One page of ``items`` (sorted by ``key``), as the spec's ``PageToken`` describes.

    The spec ("PageToken") leaves the token opaque to clients: here it is the key of the
    last item served, encoded, so a page resumes after that name even when items were
    added or dropped meanwhile, and a client cannot skip ahead by guessing offsets.
    ``pageSize`` is capped at :data:`MAX_PAGE_SIZE`.
    """
    token, size = query.get("pageToken"), query.get("pageSize")
    start = 0
    if token:
        after = _after_token(token)
        start = bisect.bisect_right([key(item) for item in items], after)
    if size is None or size == "":
        if not token:
            return items, None
        count = MAX_PAGE_SIZE
    else:
        asked = whole_number(size, negative=False)
        if asked is None or asked < 1:
            raise bad_request("pageSize must be a positive integer.")
        count = min(asked, MAX_PAGE_SIZE)
    end = start + count
    page = items[start:end]
    return page, (_page_token(key(page[-1])) if end < len(items) and page else None)


class CatalogService:
    """The protocol's handlers over one backing catalog.

    Every handler acts as the call's principal (DESIGN.md "Identity, roles and audit"):
    it reads and commits through the catalog :func:`icecore.catalog.guarded.guard` wraps for
    that principal, so grants are checked and commits audited where they happen, and it
    checks the role an administrative call needs before touching anything. A table the
    principal has no grant on is refused (403) before its existence is looked up, so the
    answer is the same whether or not it exists. Without a policy every principal has every
    role, as before; changes are still recorded in the catalog's audit log.

    Args:
        catalog: the catalog served.
        read_only: refuse every write.
        vended: storage properties handed to clients that ask for vended credentials.
        allow_locations: prefixes where tables may live besides the catalog's warehouse
            (:mod:`icecore.server.locations`).
        policy: the deployment's grants (icecore.toml), None for none.
        name: the catalog's name as grants spell it (``CATALOG::ns.table``).
        audit: where changes are recorded (:func:`icecore.catalog.audit_store.audit_sink_for`).
        reports: where metrics reports are kept (:mod:`icecore.catalog.report_store`).
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        read_only: bool = False,
        vended: Mapping[str, str] | None = None,
        allow_locations: Sequence[str] = (),
        policy: Policy | None = None,
        name: str = "",
        audit: AuditSink | None = None,
        reports: ReportStore | None = None,
    ) -> None:
        self.reports = reports
        self.locations = ServedLocations.for_catalog(catalog, allow_locations)
        self.backend = Backend(catalog, self.locations)
        self.catalog = catalog
        self.read_only = read_only
        self.vended = dict(vended or {})
        self.policy = policy
        self.name = name
        self.audit = audit

    # Principals ----------------------------------------------------------------------------

    def _as(self, call: Call) -> GuardedCatalog:
        """The catalog as the call's principal sees and changes it."""
        return guard(
            self.catalog,
            call.principal,
            self.policy,
            name=self.name,
            audit=self.audit,
            source="rest",
        )

    def _config(self, call: Call, identifier: TableIdentifier) -> dict[str, str]:
        """A ``LoadTableResult``'s ``config``: the vended properties, if the client asked.

        Only for a principal who may read the table's rows (reader and up) and has no column
        masked on it: the protocol cannot mask what an engine reads with the keys, so a
        masked principal gets metadata only (issue 31, "Column masks").
        """
        if not call.vend or not self.vended:
            return {}
        access = self._as(call).access(identifier)
        if not access.allows(Role.READER) or access.mask:
            return {}
        return dict(self.vended)

    def _visible_namespaces(self, call: Call) -> set[tuple[str, ...]] | None:
        """The namespaces the principal may see (with their parents); None: all of them.

        A namespace is visible when it holds a table they may see or a grant's glob reaches
        every table it may hold (:meth:`icecore.access.Policy.namespace_role`).
        """
        if self.policy is None:
            return None
        seen = self._as(call)
        holding = {t.namespace for t in seen.list_tables()}
        reached = {ns for ns in self.backend.namespaces() if seen.namespace_role(ns) > Role.NONE}
        return {ns[:i] for ns in holding | reached for i in range(1, len(ns) + 1)}

    def _see_namespace(self, call: Call, namespace: tuple[str, ...]) -> None:
        """Refuse (403) a namespace the principal may not see, whether or not it exists."""
        visible = self._visible_namespaces(call)
        if visible is None or namespace in visible:
            return
        if self._as(call).namespace_role(namespace) > Role.NONE:
            return  # a glob reaches it: it may be missing (404 then), not hidden
        raise Forbidden(
            f"You cannot see namespace {'.'.join(namespace)}: no grant of yours reaches a "
            "table in it; ask an admin of this deployment for a grant."
        )

    def _admin_of(self, call: Call, namespace: tuple[str, ...], action: str, doing: str) -> None:
        """Refuse (403, audited) a namespace-wide change unless the principal is its admin.

        ``action`` is the audit log's name for the change, ``doing`` how the refusal says it.
        """
        seen = self._as(call)
        role = seen.namespace_role(namespace)
        if role >= Role.ADMIN:
            return
        held = "no grant" if role is Role.NONE else f"the {role.label} role"
        why = (
            f"You cannot {doing} namespace {'.'.join(namespace)}: that needs the admin role "
            f"over the whole namespace and you have {held}; ask an admin of this deployment "
            "for a grant."
        )
        self._refused(seen, action, "", why)
        raise Forbidden(why)

    @staticmethod
    def _refused(seen: GuardedCatalog, action: str, table: str, why: str) -> None:
        """Record a refused change (a lone outcome) under the action a done one files under.

        A log that cannot be written (a read-only catalog's) changes no refusal.
        """
        with contextlib.suppress(IcecoreError):
            seen.record_outcome(new_event_id(), action, table, "refused", summary=why)

    def _check_new_namespace(self, namespace: tuple[str, ...]) -> None:
        """Refuse (400) a namespace no catalog would create, before its intent is recorded.

        The catalogs check the same rules again (:mod:`icecore.identifier`); asked here
        first, a name that could never be created (a NUL, ``..``, a case twin) leaves no
        entry in the audit log, and no unchecked text reaches it.
        """
        known = self.backend.namespaces()
        for i in range(len(namespace)):
            beside = {ns[i] for ns in known if len(ns) > i and ns[:i] == namespace[:i]}
            check_no_case_twin(namespace[i], beside, "namespace level")

    def _check_new_table(self, identifier: TableIdentifier, replacing: str | None = None) -> None:
        """Refuse (400) a table name beside one differing only by case, before any intent.

        ``replacing`` is the name a rename within the namespace gives up. Tables and child
        namespaces are both names beside it (folders, in a warehouse folder).
        """
        ns = identifier.namespace
        try:
            beside = [t.name for t in self.catalog.list_tables(ns)]
        except NotFound:
            return  # the change answers 404 for the namespace
        beside += [n[len(ns)] for n in self.backend.namespaces() if n[: len(ns)] == ns and n != ns]
        check_no_case_twin(identifier.name, [n for n in beside if n != replacing], "table")

    def _recorded(
        self,
        call: Call,
        action: str,
        table: str,
        before: str | None,
        summary: str,
        change: Callable[[], str | None],
    ) -> str | None:
        """Run ``change`` between an audited intent and its outcome; what it returns.

        ``change`` returns the metadata location it made current, if any. A change whose
        result is unknown (``CommitStateUnknown``) keeps its intent alone, as the guarded
        commit does (:meth:`icecore.catalog.guarded.GuardedCatalog.commit_metadata`).
        """
        seen = self._as(call)
        event_id = seen.record_intent(action, table, before, summary)
        try:
            after = change()
        except CommitStateUnknown:
            raise
        except CommitConflict as e:
            seen.record_outcome(event_id, action, table, "conflict", before, None, str(e))
            raise
        except RestError as e:
            seen.record_outcome(event_id, action, table, "failed", before, None, e.message)
            raise
        except BaseException as e:
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
            seen.record_outcome(event_id, action, table, "failed", before, None, why)
            raise
        seen.record_outcome(event_id, action, table, "committed", before, after, summary)
        return after

    def endpoints(self) -> list[Endpoint]:
        """Every route served (the config and token routes are added by :func:`create_app`)."""
        ns = "/v1/namespaces/{namespace}"
        table = ns + "/tables/{table}"
        return [
            Endpoint("GET", "/v1/namespaces", self.list_namespaces),
            Endpoint("POST", "/v1/namespaces", self.create_namespace, writes=True),
            Endpoint("GET", ns, self.load_namespace),
            Endpoint("HEAD", ns, self.namespace_exists),
            Endpoint("DELETE", ns, self.drop_namespace, writes=True),
            Endpoint("POST", ns + "/properties", self.update_properties, writes=True),
            Endpoint("GET", ns + "/tables", self.list_tables),
            Endpoint("POST", ns + "/tables", self.create_table, writes=True),
            Endpoint("POST", ns + "/register", self.register_table, writes=True),
            Endpoint("GET", table, self.load_table),
            Endpoint("HEAD", table, self.table_exists),
            Endpoint("POST", table, self.commit, writes=True),
            Endpoint("DELETE", table, self.drop_table, writes=True),
            Endpoint(
                "POST", table + "/metrics", self.report_metrics, max_body_bytes=MAX_REPORT_BYTES
            ),
            Endpoint("POST", "/v1/tables/rename", self.rename_table, writes=True),
            Endpoint(
                "POST",
                "/v1/transactions/commit",
                self.commit_transaction,
                writes=True,
                advertised=supports_transactions(self.catalog),
            ),
            *ViewRoutes(self).endpoints(),
            *PlanningRoutes(self).endpoints(),
        ]

    # Namespaces ----------------------------------------------------------------------------

    def _existing(self, text: str) -> tuple[str, ...]:
        namespace = namespace_of(text)
        if not self.backend.namespace_exists(namespace):
            raise no_such_namespace(namespace)
        return namespace

    def list_namespaces(self, call: Call) -> Any:
        """``GET /v1/namespaces``: the children of ``parent`` (top level by default), paged."""
        parent: tuple[str, ...] = ()
        if call.query.get("parent"):
            self._see_namespace(call, namespace_of(call.query["parent"]))
            parent = self._existing(call.query["parent"])
        visible = self._visible_namespaces(call)
        children = sorted(
            {
                ns[: len(parent) + 1]
                for ns in self.backend.namespaces()
                if len(ns) > len(parent) and ns[: len(parent)] == parent
            }
        )
        if visible is not None:  # filtered before paging, so pages stay whole
            children = [ns for ns in children if ns in visible]
        page, token = _page(children, call.query, list)
        return {"namespaces": [list(ns) for ns in page], "next-page-token": token}

    def create_namespace(self, call: Call) -> Any:
        """``POST /v1/namespaces``: create a namespace with its properties."""
        body = call.body if isinstance(call.body, Mapping) else {}
        namespace = _namespace_list(body.get("namespace"), "'namespace'")
        props = body.get("properties") or {}
        if not isinstance(props, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in props.items()
        ):
            raise bad_request("'properties' must map strings to strings.")
        if "location" in props:  # where the namespace's new tables will be written
            plain_text(props["location"], "The namespace property 'location'")
        check_new_namespace(namespace)
        self._admin_of(call, namespace, "create_namespace", "create")
        self._check_new_namespace(namespace)
        self.locations.require_namespace_properties(props)
        self._recorded(
            call,
            "create_namespace",
            "",
            None,
            f"namespace {'.'.join(namespace)} created",
            lambda: self.backend.create_namespace(namespace, dict(props)),
        )
        return {"namespace": list(namespace), "properties": dict(props)}

    def load_namespace(self, call: Call) -> Any:
        """``GET /v1/namespaces/{ns}``: the namespace's properties."""
        namespace = namespace_of(call.params["namespace"])
        self._see_namespace(call, namespace)
        try:
            props = self.backend.namespace_properties(namespace)
        except NotFound:
            raise no_such_namespace(namespace) from None
        return {"namespace": list(namespace), "properties": props}

    def namespace_exists(self, call: Call) -> Any:
        """``HEAD /v1/namespaces/{ns}``: 204 if it exists, else 404."""
        self._see_namespace(call, namespace_of(call.params["namespace"]))
        self._existing(call.params["namespace"])
        return Response(status_code=204)

    def drop_namespace(self, call: Call) -> Any:
        """``DELETE /v1/namespaces/{ns}``: drop an empty namespace (409 if not empty)."""
        self._admin_of(call, namespace_of(call.params["namespace"]), "drop_namespace", "drop")
        namespace = self._existing(call.params["namespace"])
        self._recorded(
            call,
            "drop_namespace",
            "",
            None,
            f"namespace {'.'.join(namespace)} dropped",
            lambda: self.backend.drop_namespace(namespace),
        )
        return Response(status_code=204)

    def update_properties(self, call: Call) -> Any:
        """``POST .../properties``: set and remove properties; says what was missing."""
        self._admin_of(
            call,
            namespace_of(call.params["namespace"]),
            "update_namespace_properties",
            "change the properties of",
        )
        namespace = self._existing(call.params["namespace"])
        body = call.body if isinstance(call.body, Mapping) else {}
        updates = body.get("updates") or {}
        removals = body.get("removals") or []
        if not isinstance(updates, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in updates.items()
        ):
            raise bad_request("'updates' must map strings to strings.")
        if "location" in updates:
            plain_text(updates["location"], "The namespace property 'location'")
        if not isinstance(removals, list) or not all(isinstance(r, str) for r in removals):
            raise bad_request("'removals' must be a list of strings.")
        self.locations.require_namespace_properties(updates)
        changed: list[tuple[list[str], list[str], list[str]]] = []

        def update() -> None:
            changed.append(self.backend.update_properties(namespace, dict(updates), list(removals)))

        self._recorded(
            call,
            "update_namespace_properties",
            "",
            None,
            f"namespace {'.'.join(namespace)} properties: "
            + ", ".join(sorted({*updates, *removals})),
            update,
        )
        updated, removed, missing = changed[0]
        return {"updated": updated, "removed": removed, "missing": missing or None}

    # Tables --------------------------------------------------------------------------------

    def _table(self, call: Call) -> TableIdentifier:
        namespace = namespace_of(call.params["namespace"])
        return TableIdentifier(namespace, call.params["table"])

    def _load_result(self, identifier: TableIdentifier, call: Call | None = None) -> dict[str, Any]:
        """The table's ``LoadTableResult``; with ``call``, as its principal may see it (viewer)."""
        if call is not None:
            self._require_viewer(call, identifier)
        try:
            table = self.catalog.load_table(identifier)
        except NotFound:
            # NoSuchTable even when the namespace is missing, as Iceberg Java's server
            # answers: Spark resolves ``ns.t.snapshots`` by first loading table ``snapshots``
            # in namespace ``ns.t`` and falls back to the metadata table only on NoSuchTable.
            raise no_such_table(identifier) from None
        return {
            "metadata-location": table.metadata_location,
            "metadata": serialize_metadata(table.metadata),
            "config": self._config(call, identifier) if call is not None else {},
        }

    def _require_table(
        self, call: Call, identifier: TableIdentifier, role: Role, doing: str, action: str
    ) -> None:
        """Refuse (403; audited from owner up) unless the principal has ``role`` on the table.

        Asked before the table is looked up, so a missing grant reads the same whether or
        not the table exists.
        """
        seen = self._as(call)
        try:
            seen.access(identifier).require(role, doing, str(identifier))
        except Forbidden as e:
            if role >= Role.OWNER:
                self._refused(seen, action, str(identifier), str(e))
            raise

    def _require_viewer(self, call: Call, identifier: TableIdentifier) -> None:
        """Refuse (403) a table the principal may not see, before looking it up.

        Except a name under a table they may see (``sales.orders.snapshots``): that is 404
        ``NoSuchTable``, whether or not such a table exists, because Spark resolves a
        metadata table by first loading it as a table in the namespace ``sales.orders`` and
        falls back to the metadata table only on ``NoSuchTable``; a 403 there would deny a
        reader of ``sales.orders`` its history. The 404 is the same for a table that exists
        there, so it reveals nothing either.
        """
        seen = self._as(call)
        try:
            seen.require(identifier, Role.VIEWER, "see its metadata")
        except Forbidden:
            if len(identifier.namespace) > 1:
                parent = TableIdentifier(identifier.namespace[:-1], identifier.namespace[-1])
                if seen.access(parent).allows(Role.VIEWER):
                    raise no_such_table(identifier) from None
            raise

    def list_tables(self, call: Call) -> Any:
        """``GET .../tables``: the namespace's tables the principal may see, paged."""
        self._see_namespace(call, namespace_of(call.params["namespace"]))
        namespace = self._existing(call.params["namespace"])
        tables = sorted(self._as(call).list_tables(namespace), key=lambda t: t.name)
        page, token = _page(tables, call.query, lambda t: [t.name])
        return {
            "identifiers": [{"namespace": list(t.namespace), "name": t.name} for t in page],
            "next-page-token": token,
        }

    def load_table(self, call: Call) -> Any:
        """``GET .../tables/{t}``: ``LoadTableResult`` with the current metadata."""
        return self._load_result(self._table(call), call)

    def table_exists(self, call: Call) -> Any:
        """``HEAD .../tables/{t}`` (spec ``tableExists``): 204 if it exists, else 404.

        Asks the catalog for the table's metadata location only: the metadata file is not
        read, so a probe stays cheap and answers even when that file is damaged.
        """
        identifier = self._table(call)
        self._require_viewer(call, identifier)
        try:
            self.catalog.metadata_location(identifier)
        except NotFound:
            raise no_such_table(identifier) from None
        return Response(status_code=204)

    def create_table(self, call: Call) -> Any:
        """``POST .../tables``: create a table, or stage it (``stage-create``: nothing written).

        Needs the admin role over the namespace; the create is audited (a stage writes
        nothing: its commit is).
        """
        self._admin_of(call, namespace_of(call.params["namespace"]), "create", "create a table in")
        namespace = self._existing(call.params["namespace"])
        body = call.body
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            raise bad_request("A create-table request needs a 'name' and a 'schema'.")
        if not isinstance(body.get("schema"), Mapping):
            # Iceberg Java's CreateTableRequest.validate: a table without a schema is refused.
            raise bad_request("A create-table request needs a 'schema' object.")
        identifier = check_new_identifier(TableIdentifier(namespace, body["name"]))
        self._check_new_table(identifier)
        location = body.get("location") or self.backend.default_location(identifier)
        if not isinstance(location, str):
            raise bad_request("'location' must be a string.")
        plain_text(location, "'location'")
        props = body.get("properties") or {}
        if not isinstance(props, Mapping):
            raise bad_request("'properties' must be an object.")
        for key in PATH_PROPERTIES & set(props):
            if isinstance(props[key], str):
                plain_text(props[key], f"property {key!r}")
        self._require_new_location(identifier, location)
        metadata = new_table_metadata(
            location=location,
            schema=body["schema"],
            partition_spec=body.get("partition-spec"),
            write_order=body.get("write-order"),
            properties=props,
        )
        self.locations.require_metadata(metadata)
        if body.get("stage-create"):
            if identifier in self.catalog.list_tables(namespace):
                raise RestError(
                    409, "AlreadyExistsException", f"Table already exists: {identifier}"
                )
            return {
                "metadata": serialize_metadata(metadata),
                "config": self._config(call, identifier),
            }
        new_location = self._recorded(
            call,
            "create",
            str(identifier),
            None,
            f"table created at {location}",
            lambda: self.backend.create_table(identifier, metadata, encode_metadata(metadata)),
        )
        return {
            "metadata-location": new_location,
            "metadata": serialize_metadata(metadata),
            "config": self._config(call, identifier),
        }

    def _require_new_location(self, identifier: TableIdentifier, location: str) -> None:
        """A new table's location: below the served roots and its namespace's location."""
        try:
            under = self.backend.namespace_properties(identifier.namespace).get("location")
        except NotFound:
            under = None
        self.locations.require(location, "the table's location", under=under or None)

    def register_table(self, call: Call) -> Any:
        """``POST .../register``: add a table for an existing metadata file (admin, audited)."""
        self._admin_of(
            call, namespace_of(call.params["namespace"]), "register", "register a table in"
        )
        namespace = self._existing(call.params["namespace"])
        body = call.body if isinstance(call.body, Mapping) else {}
        name, location = body.get("name"), body.get("metadata-location")
        if not isinstance(name, str) or not isinstance(location, str):
            raise bad_request("A register request needs 'name' and 'metadata-location'.")
        plain_text(location, "'metadata-location'")
        identifier = check_new_identifier(TableIdentifier(namespace, name))
        self._check_new_table(identifier)
        self.locations.require(location, "the metadata file")  # before reading it
        try:
            metadata = read_table_metadata(self.backend.io, location)  # refuse what is not metadata
        except NotFound as e:
            # A file, not a namespace, is missing: the spec's generic NotFoundException.
            raise RestError(404, "NotFoundException", str(e)) from None
        # Refuse metadata placing the table outside the served locations.
        self.locations.require_metadata(metadata)

        def register() -> str:
            self.backend.register_table(identifier, location)
            return location

        self._recorded(call, "register", str(identifier), None, f"registered {location}", register)
        return self._load_result(identifier, call)

    def commit(self, call: Call) -> Any:
        """``POST .../tables/{t}``: check the requirements and apply the updates atomically.

        The body's optional ``identifier`` (spec ``CommitTableRequest``) must name the
        table of the path: a client that says one table and addresses another gets 400.
        """
        identifier = self._table(call)
        named = call.body.get("identifier") if isinstance(call.body, Mapping) else None
        if named is not None:
            said = _identifier(named, "The commit's 'identifier'")
            if said != identifier:
                raise bad_request(
                    f"The commit's identifier {said} is not the table of its path, {identifier}."
                )
        requirements, updates = parse_commit(call.body)
        if any(isinstance(r, AssertCreate) for r in requirements):
            return self._create_by_commit(call, identifier, requirements, updates)
        # The owner role, asked before anything is read; the swap itself goes through the
        # guarded catalog's commit path, which asks again and writes the audit log.
        self._require_table(call, identifier, Role.OWNER, "commit a change", "commit")
        failpoint("rest-before-commit")
        try:
            location, metadata = commit_table(
                self._as(call),
                identifier,
                requirements,
                updates,
                self.locations.require_metadata,
            )
        except NotFound:
            self._load_result(identifier)  # the precise 404
            raise
        failpoint("rest-after-commit")
        return {"metadata-location": location, "metadata": serialize_metadata(metadata)}

    def _create_by_commit(
        self,
        call: Call,
        identifier: TableIdentifier,
        requirements: list[Requirement],
        updates: list[MetadataUpdate],
    ) -> Any:
        """A staged create's commit: the table from its updates, then created (409 if it exists).

        Needs the admin role over the namespace, as ``createTable``; audited as a create.
        """
        check_new_identifier(identifier)
        self._admin_of(call, identifier.namespace, "create", "create a table in")
        self._check_new_table(identifier)
        if not self.backend.namespace_exists(identifier.namespace):
            raise no_such_namespace(identifier.namespace)
        if identifier in self.catalog.list_tables(identifier.namespace):
            raise RestError(409, "CommitFailedException", f"Table already exists: {identifier}")
        raw = updates_to_json(updates)
        first = {u["action"]: u for u in raw}
        schema = next((u["schema"] for u in raw if u["action"] == "add-schema"), None)
        if not isinstance(schema, Mapping):
            raise bad_request("A create commit needs an add-schema update.")
        version = first.get("upgrade-format-version", {}).get("format-version")
        location = first.get("set-location", {}).get("location") or self.backend.default_location(
            identifier
        )
        self._require_new_location(identifier, location)
        base = new_table_metadata(
            location=location,
            schema=schema,
            partition_spec=first.get("add-spec", {}).get("spec"),
            write_order=first.get("add-sort-order", {}).get("sort-order"),
            properties=first.get("set-properties", {}).get("updates"),
            table_uuid=first.get("assign-uuid", {}).get("uuid"),
            format_version=version if isinstance(version, int) else None,
            fresh_ids=False,
        )
        creating = {
            "add-schema",
            "set-current-schema",
            "add-spec",
            "set-default-spec",
            "add-sort-order",
            "set-default-sort-order",
            "set-location",
            "set-properties",
            "assign-uuid",
            "upgrade-format-version",
        }
        rest = [u for u in updates if u.action not in creating]
        metadata = apply_rest_updates(base, rest, None)
        self.locations.require_metadata(metadata)
        created = self._recorded(
            call,
            "create",
            str(identifier),
            None,
            f"table created at {metadata.location}",
            lambda: self.backend.create_table(identifier, metadata, encode_metadata(metadata)),
        )
        return {"metadata-location": created, "metadata": serialize_metadata(metadata)}

    def commit_transaction(self, call: Call) -> Any:
        """``POST /v1/transactions/commit``: several tables' changes, all applied or none."""
        body = call.body
        raw = body.get("table-changes") if isinstance(body, Mapping) else None
        if not isinstance(raw, list) or not raw:
            raise bad_request("A transaction needs a non-empty 'table-changes' list.")
        changes: list[TableChange] = []
        for item in raw:
            if not isinstance(item, Mapping):
                raise bad_request("Each table change must be an object.")
            identifier = _identifier(item.get("identifier"), "A table change's 'identifier'")
            requirements, updates = parse_commit(item)
            if any(isinstance(r, AssertCreate) for r in requirements):
                raise bad_request("A transaction cannot create tables (assert-create).")
            changes.append(TableChange(identifier, requirements, updates))
        names = [c.identifier for c in changes]
        if len(set(names)) != len(names):
            raise bad_request("A transaction names a table twice; send one change per table.")
        require_transactions(self.catalog)
        for name in names:  # every table owned, or nothing is read or written
            self._require_table(call, name, Role.OWNER, "commit a change", "commit")
        seen = self._as(call)
        try:
            commit_transaction(
                seen,
                changes,
                self.locations.require_metadata,
                swap_all=lambda commits: commit_all(seen, commits),
            )
        except NotFound as e:
            # A table is missing (whether or not its namespace is): NoSuchTable, as Java.
            raise RestError(404, "NoSuchTableException", str(e)) from None
        return Response(status_code=204)

    def report_metrics(self, call: Call) -> Any:
        """``POST .../metrics`` (spec ``reportMetrics``): a scan or commit report, kept.

        A report for a table the catalog does not hold is the spec's 404 (``reportMetrics``
        documents ``NoSuchTableException``), found as ``HEAD`` finds it, without a read;
        the viewer role on the table, as ``HEAD``. A body that is not a ``ScanReport`` or
        ``CommitReport`` is the spec's 400; a valid one is kept in the catalog's report
        store (:mod:`icecore.catalog.report_store`, DESIGN.md "Workload") with the
        principal when sign-in exists. A store that cannot be written is logged, and the
        report still answered 204: a client's scan or commit never fails for its report.
        """
        response = self.table_exists(call)
        try:
            report = validate_report(call.body)
        except InvalidReport as e:
            raise bad_request(str(e)) from None
        if any(str(k).startswith(RESERVED_PREFIX) for k in report.get("metadata") or {}):
            # Only this server marks the plans it served (their filters are trusted as such).
            raise bad_request(
                f"Report metadata keys starting with {RESERVED_PREFIX!r} are Icecore's own."
            )
        if self.reports is not None:
            principal = call.principal
            kept = KeptReport(
                time_ms=time.time_ns() // 1_000_000,
                table=str(self._table(call)),
                principal=None if principal.source == "anonymous" else principal.display,
                report=report,
            )
            try:
                self.reports.append(kept)
            except ReportsUnavailable as e:
                log.warning("%s", e)
        return response

    def drop_table(self, call: Call) -> Any:
        """``DELETE .../tables/{t}``: remove the table from the catalog.

        Its files are kept unless ``purgeRequested=true``: then, once the entry is gone, the
        files its metadata reaches under its location are deleted (the server log lists
        what was skipped).
        """
        identifier = self._table(call)
        purge = call.query.get("purgeRequested", "false").strip().lower()
        if purge not in ("true", "false"):
            raise bad_request("purgeRequested must be true or false.")
        action = "purge" if purge == "true" else "drop"
        self._require_table(call, identifier, Role.ADMIN, f"{action} tables", action)
        before = self._load_result(identifier)["metadata-location"]

        def drop() -> None:
            self.backend.drop_table(identifier, purge=purge == "true")

        self._recorded(
            call,
            action,
            str(identifier),
            before,
            "table dropped" if action == "drop" else "table dropped and its files purged",
            drop,
        )
        return Response(status_code=204)

    def rename_table(self, call: Call) -> Any:
        """``POST /v1/tables/rename``: rename (or move) a table."""
        body = call.body if isinstance(call.body, Mapping) else {}
        source = _identifier(body.get("source"), "'source'")
        destination = _identifier(body.get("destination"), "'destination'")
        check_new_identifier(destination)
        # The admin role on both names, before either is looked up.
        self._require_table(call, source, Role.ADMIN, "rename tables", "rename")
        self._require_table(call, destination, Role.ADMIN, "rename tables", "rename")
        self._check_new_table(
            destination, source.name if source.namespace == destination.namespace else None
        )
        before = self._load_result(source)["metadata-location"]
        if not self.backend.namespace_exists(destination.namespace):
            raise no_such_namespace(destination.namespace)

        def rename() -> str:
            self.backend.rename_table(source, destination)
            return str(before)

        self._recorded(call, "rename", str(source), before, f"renamed to {destination}", rename)
        return Response(status_code=204)


# The ASGI application -------------------------------------------------------------------------


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length")
    length = whole_number(declared, negative=False) if declared is not None else None
    if length is not None and length > limit:
        raise RestError(413, "RequestTooLargeException", f"The request body exceeds {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RestError(
                413, "RequestTooLargeException", f"The request body exceeds {limit} bytes."
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _json_body(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise bad_request(f"Malformed JSON in the request body: {str(e)[:200]}") from None


def one_route(path: str, handlers: Mapping[str, Callable[[Request], Awaitable[Response]]]) -> Route:
    """One route per path, whatever its methods, so a 405's ``Allow`` lists all of them.

    Starlette answers a method no route of a path takes from the first route whose path
    matched: with one route per method, ``Allow`` named that route's method only. A HEAD
    where the spec defines none is the GET without its body (starlette's rule).
    """

    async def dispatch(request: Request) -> Response:
        method = request.method
        if method == "HEAD" and method not in handlers:
            method = "GET"
        return await handlers[method](request)

    return Route(path, dispatch, methods=list(handlers))


def create_app(
    catalog: Catalog,
    *,
    read_only: bool = False,
    issuer: TokenIssuer | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    vended: Mapping[str, str] | None = None,
    allow_locations: Sequence[str] = (),
    policy: Policy | None = None,
    verifier: TokenVerifier | None = None,
    name: str = "",
    audit: AuditSink | None = None,
    reports: ReportStore | None = None,
) -> Starlette:
    """The ASGI application serving ``catalog`` (see the module docstring).

    Args:
        catalog: the backing catalog.
        read_only: answer every write with 403.
        issuer: when set, ``/v1/oauth/tokens`` issues tokens and every other call needs one.
        max_body_bytes: the largest request body accepted (413 above).
        vended: storage properties returned in ``LoadTableResult.config`` to a client that
            sends ``X-Iceberg-Access-Delegation: vended-credentials``
            (:mod:`icecore.server.vend`).
        allow_locations: prefixes where tables may live besides the catalog's warehouse
            (``--allow-location``; :mod:`icecore.server.locations`).
        policy: the grants of icecore.toml: every call then needs a token naming a
            principal, whose role is checked on every endpoint
            (:mod:`icecore.server.principals`, :class:`CatalogService`).
        verifier: checks bearer JWTs of ``[auth]``'s issuer (with a policy).
        name: the catalog's name as grants spell it (``CATALOG::ns.table``).
        audit: the catalog's audit log, where every change and refused change is recorded.
        reports: where the metrics reports clients post are kept (None: not kept).

    Raises:
        ValueError: an ``allow_locations`` prefix that is no local folder or object store.
    """
    service = CatalogService(
        catalog,
        read_only=read_only,
        vended=vended,
        allow_locations=allow_locations,
        policy=policy,
        name=name,
        audit=audit,
        reports=reports,
    )
    auth = Authenticator(issuer, verifier if policy is not None else None, policy is not None)

    async def principal_of(request: Request) -> Principal:
        """The request's principal; a JWT is checked in a worker thread (it may fetch keys)."""
        header = request.headers.get("authorization")
        if auth.verifier is None:
            return auth.principal(header)
        return await run_in_threadpool(auth.principal, header)

    served = service.endpoints()
    names = [e.spec_name for e in served if e.advertised and not (read_only and e.writes)]

    def wrap(endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            try:
                principal = await principal_of(request)
                if endpoint.writes and read_only:
                    raise RestError(403, "ForbiddenException", "This catalog is served read-only.")
                limit = min(max_body_bytes, endpoint.max_body_bytes or max_body_bytes)
                body = _json_body(await read_body(request, limit))
                call = Call(
                    dict(request.path_params),
                    dict(request.query_params),
                    body,
                    vend=wants_vended(request.headers.get(DELEGATION_HEADER)),
                    principal=principal,
                )
                result = await run_in_threadpool(endpoint.handler, call)
            except RestError as e:
                return e.response()
            except IcecoreError as e:
                not_found = (
                    "NoSuchTableException"
                    if "{table}" in endpoint.path
                    else "NoSuchViewException"
                    if "{view}" in endpoint.path
                    else "NoSuchNamespaceException"
                )
                return from_icecore(e, not_found=not_found).response()
            except Exception:
                log.exception("Unexpected error on %s %s", endpoint.method, endpoint.path)
                return error_response(
                    500,
                    "InternalServerError",
                    "The server failed unexpectedly; the error is in its log.",
                )
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        return run

    async def config(request: Request) -> Response:
        # Its endpoint list is the same for every principal (clients need it to choose
        # routes); each endpoint checks the role itself.
        try:
            await principal_of(request)
        except RestError as e:
            return e.response()
        return JSONResponse({"defaults": {}, "overrides": {}, "endpoints": names})

    async def tokens(request: Request) -> Response:
        if issuer is None:
            return error_response(
                404, "NotFoundException", "This server issues no tokens (no --credential)."
            )
        try:
            raw = await read_body(request, 64 * 1024)
        except RestError as e:
            return e.response()
        form = dict(parse_qsl(raw.decode("utf-8", errors="replace")))
        try:
            return JSONResponse(issuer.grant(form))
        except OAuthError as e:
            return JSONResponse(e.body(), e.code)

    routes = [
        Route("/v1/config", config, methods=["GET"]),
        Route("/v1/oauth/tokens", tokens, methods=["POST"]),
    ]
    by_path: dict[str, list[Endpoint]] = {}
    for e in served:
        by_path.setdefault(e.path, []).append(e)
    for path, endpoints in by_path.items():
        routes.append(one_route(path, {e.method: wrap(e) for e in endpoints}))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kinds = {404: "NoSuchEndpointException", 405: "MethodNotAllowedException"}
        response = error_response(
            exc.status_code,
            kinds.get(exc.status_code, "BadRequestException"),
            f"No such endpoint: {request.method} {request.url.path[:200]}"
            if exc.status_code in kinds
            else str(exc.detail)[:200],
        )
        # RFC 9110 15.5.6: a 405 names the methods the resource has (starlette's Allow).
        response.headers.update(exc.headers or {})
        return response

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("Unexpected error", exc_info=exc)
        return error_response(
            500, "InternalServerError", "The server failed unexpectedly; the error is in its log."
        )

    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )


__all__ = ["MAX_BODY_BYTES", "CatalogService", "create_app"]

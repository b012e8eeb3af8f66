"""The REST protocol's 8 view operations, served over a catalog's views (issue 35).

``listViews``, ``createView``, ``loadView``, ``replaceView``, ``dropView``, ``viewExists``,
``renameView`` and ``registerView`` as the OpenAPI spec defines them (paths under
``/v1/namespaces/{namespace}/views``, ``/v1/views/rename`` and ``.../register-view``),
answering ``LoadViewResult`` and the spec's ``ErrorModel``s: 404 ``NoSuchViewException``
or ``NoSuchNamespaceException``, 409 ``AlreadyExistsException`` (the name is a table or a
view) or ``CommitFailedException``. They are advertised in ``/v1/config`` where the catalog
keeps views (:func:`icecore.catalog.views.view_store_for`).

Views follow the tables' rules (:class:`icecore.server.app.CatalogService`): a name passes
:mod:`icecore.identifier`'s rule and differs from its neighbours by more than case, a
location (and ``write.metadata.path``) lies below the served locations and the namespace's
``location``, grants match a view as they match a table (``CATALOG::ns.view``): viewer to
list and load, owner to replace, admin to drop and rename, namespace admin to create and
register; every change is in the audit log (actions ``view:create``, ``view:replace``, ...).

``replaceView`` checks the ``assert-view-uuid`` requirement and retries a lost swap on the
fresh view (:func:`icecore.catalog.views.commit_view_updates`), as Iceberg Java's server does:
two concurrent replaces both land, each its own version, and neither is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from icecore.access import Role
from icecore.catalog.base import TableIdentifier
from icecore.catalog.views import (
    View,
    ViewStore,
    commit_view_updates,
    load_view,
    read_view,
    view_store_for,
)
from icecore.errors import InvalidMetadata, NotFound, Unsupported
from icecore.identifier import check_new_identifier, check_no_case_twin
from icecore.metadata.view import (
    ViewMetadata,
    new_view_metadata,
    view_metadata_to_json,
    view_updates_from_json,
    view_uuid_requirement,
    view_version_from_json,
)
from icecore.schema import schema_from_json
from icecore.server.errors import RestError, bad_request, no_such_namespace, plain_text

if TYPE_CHECKING:
    from icecore.server.app import Call, CatalogService, Endpoint

METADATA_PATH = "write.metadata.path"


def no_such_view(identifier: object) -> RestError:
    """A 404 naming the view (also when its namespace is missing, as Iceberg Java answers)."""
    return RestError(404, "NoSuchViewException", f"View does not exist: {identifier}")


def load_view_result(view: View) -> dict[str, Any]:
    """The spec's ``LoadViewResult``."""
    return {
        "metadata-location": view.metadata_location,
        "metadata": view_metadata_to_json(view.metadata),
        "config": {},
    }


class ViewRoutes:
    """The view handlers, sharing the table handlers' roles, names, locations and audit."""

    def __init__(self, service: CatalogService) -> None:
        self.service = service

    @property
    def store(self) -> ViewStore:
        """The catalog's views; 406 where it keeps none."""
        store = view_store_for(self.service.catalog)
        if store is None:
            raise RestError(406, "UnsupportedOperationException", "This catalog keeps no views.")
        return store

    def endpoints(self) -> list[Endpoint]:
        """The 8 view routes; advertised only where the catalog keeps views."""
        from icecore.server.app import Endpoint

        ns = "/v1/namespaces/{namespace}"
        view = ns + "/views/{view}"
        served = view_store_for(self.service.catalog) is not None
        return [
            Endpoint("GET", ns + "/views", self.list_views, advertised=served),
            Endpoint("POST", ns + "/views", self.create_view, writes=True, advertised=served),
            Endpoint("GET", view, self.load_view, advertised=served),
            Endpoint("HEAD", view, self.view_exists, advertised=served),
            Endpoint("POST", view, self.replace_view, writes=True, advertised=served),
            Endpoint("DELETE", view, self.drop_view, writes=True, advertised=served),
            Endpoint("POST", "/v1/views/rename", self.rename_view, writes=True, advertised=served),
            Endpoint(
                "POST", ns + "/register-view", self.register_view, writes=True, advertised=served
            ),
        ]

    # Helpers ---------------------------------------------------------------------------------

    def _view(self, call: Call) -> TableIdentifier:
        from icecore.server.app import namespace_of

        return TableIdentifier(namespace_of(call.params["namespace"]), call.params["view"])

    def _require(
        self, call: Call, identifier: TableIdentifier, role: Role, doing: str, action: str
    ) -> None:
        self.service._require_table(call, identifier, role, doing, action)

    def _loaded(self, identifier: TableIdentifier) -> View:
        try:
            return load_view(self.store, identifier)
        except NotFound:
            raise no_such_view(identifier) from None

    def _check_new(self, identifier: TableIdentifier, replacing: str | None = None) -> None:
        """A new view name: the rule for names, and no case twin among tables and views."""
        check_new_identifier(identifier)
        ns = identifier.namespace
        try:
            beside = [t.name for t in self.service.catalog.list_tables(ns)]
            beside += [v.name for v in self.store.list_views(ns)]
        except NotFound:
            return
        check_no_case_twin(identifier.name, [n for n in beside if n != replacing], "view")

    def _check_locations(
        self, identifier: TableIdentifier, metadata: ViewMetadata, *, new: bool = False
    ) -> None:
        """The view's location and metadata folder below the served roots (403 otherwise).

        A new view's location must also lie below its namespace's ``location``, as a new
        table's (:meth:`CatalogService._require_new_location`).
        """
        under = None
        if new:
            try:
                props = self.service.backend.namespace_properties(identifier.namespace)
                under = props.get("location") or None
            except NotFound:
                under = None
        locations = self.service.locations
        location = plain_text(metadata.location, "'location'")
        locations.require(location, "the view's location", under=under)
        path = metadata.properties.get(METADATA_PATH)
        if path:
            locations.require(plain_text(path, METADATA_PATH), f"the view's {METADATA_PATH}")

    def _default_location(self, identifier: TableIdentifier) -> str:
        """Where a view goes unless the request says: a folder view's folder, else a table's."""
        folder = getattr(self.store, "view_folder", None)
        if callable(folder):
            return str(folder(identifier))
        return self.service.backend.default_location(identifier)

    def _name_taken(self, identifier: TableIdentifier) -> None:
        """409 when the name is already a table or a view (the spec's createView conflict)."""
        if identifier in self.service.catalog.list_tables(identifier.namespace):
            raise RestError(409, "AlreadyExistsException", f"Table already exists: {identifier}")
        if identifier in self.store.list_views(identifier.namespace):
            raise RestError(409, "AlreadyExistsException", f"View already exists: {identifier}")

    # Handlers ------------------------------------------------------------------------------

    def list_views(self, call: Call) -> Any:
        """``GET .../views``: the namespace's views the principal may see, paged."""
        from icecore.server.app import _page, namespace_of

        self.service._see_namespace(call, namespace_of(call.params["namespace"]))
        namespace = self.service._existing(call.params["namespace"])
        self.store  # noqa: B018 - 406 where the catalog keeps no views
        views = sorted(self.service._as(call).list_views(namespace), key=lambda v: v.name)
        page, token = _page(views, call.query, lambda v: [v.name])
        return {
            "identifiers": [{"namespace": list(v.namespace), "name": v.name} for v in page],
            "next-page-token": token,
        }

    def load_view(self, call: Call) -> Any:
        """``GET .../views/{view}``: ``LoadViewResult``."""
        identifier = self._view(call)
        self.service._require_viewer(call, identifier)
        return load_view_result(self._loaded(identifier))

    def view_exists(self, call: Call) -> Any:
        """``HEAD .../views/{view}``: 204 if it exists, else 404 (the file is not read)."""
        identifier = self._view(call)
        self.service._require_viewer(call, identifier)
        try:
            self.store.view_metadata_location(identifier)
        except NotFound:
            raise no_such_view(identifier) from None
        return Response(status_code=204)

    def create_view(self, call: Call) -> Any:
        """``POST .../views`` (``CreateViewRequest``): namespace admin, audited."""
        from icecore.server.app import namespace_of

        self.service._admin_of(
            call, namespace_of(call.params["namespace"]), "view:create", "create a view in"
        )
        namespace = self.service._existing(call.params["namespace"])
        body = call.body
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            raise bad_request("A create-view request needs a 'name', 'schema' and 'view-version'.")
        if not isinstance(body.get("schema"), Mapping) or not isinstance(
            body.get("view-version"), Mapping
        ):
            raise bad_request("A create-view request needs a 'schema' and a 'view-version' object.")
        identifier = TableIdentifier(namespace, body["name"])
        self._check_new(identifier)
        props = body.get("properties") or {}
        if not isinstance(props, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in props.items()
        ):
            raise bad_request("'properties' must map strings to strings.")
        location = body.get("location") or self._default_location(identifier)
        if not isinstance(location, str):
            raise bad_request("'location' must be a string.")
        try:
            metadata = new_view_metadata(
                location,
                schema_from_json(body["schema"]),
                view_version_from_json(body["view-version"], "'view-version'"),
                props,
            )
        except InvalidMetadata as e:
            raise bad_request(str(e)) from None
        self._check_locations(identifier, metadata, new=True)
        self._name_taken(identifier)
        created = self.service._recorded(
            call,
            "view:create",
            str(identifier),
            None,
            f"view created at {metadata.location}",
            lambda: self.store.create_view(identifier, metadata),
        )
        assert created is not None
        return load_view_result(View(identifier, created, metadata))

    def replace_view(self, call: Call) -> Any:
        """``POST .../views/{view}`` (``CommitViewRequest``): owner; retried; audited."""
        from icecore.server.app import _identifier

        identifier = self._view(call)
        body = call.body if isinstance(call.body, Mapping) else None
        if body is None:
            raise bad_request("A view commit needs an 'updates' list.")
        if body.get("identifier") is not None:
            said = _identifier(body["identifier"], "The commit's 'identifier'")
            if said != identifier:
                raise bad_request(
                    f"The commit's identifier {said} is not the view of its path, {identifier}."
                )
        try:
            updates = view_updates_from_json(body.get("updates"))
            expected = view_uuid_requirement(body.get("requirements"))
        except InvalidMetadata as e:
            raise bad_request(str(e)) from None
        self._require(call, identifier, Role.OWNER, "replace a view", "view:replace")
        before = self._loaded(identifier)
        checked = _CheckedStore(self.store, lambda md: self._check_locations(identifier, md))
        done: list[View] = []
        try:
            self.service._recorded(
                call,
                "view:replace",
                str(identifier),
                before.metadata_location,
                f"view replaced ({len(updates)} updates)",
                lambda: _commit(checked, identifier, updates, expected, done),
            )
        except NotFound:
            raise no_such_view(identifier) from None
        return load_view_result(done[0])

    def drop_view(self, call: Call) -> Any:
        """``DELETE .../views/{view}``: admin; the view's files stay."""
        identifier = self._view(call)
        self._require(call, identifier, Role.ADMIN, "drop views", "view:drop")
        before = self._loaded(identifier).metadata_location
        self.service._recorded(
            call,
            "view:drop",
            str(identifier),
            before,
            "view dropped",
            lambda: self.store.drop_view(identifier),
        )
        return Response(status_code=204)

    def rename_view(self, call: Call) -> Any:
        """``POST /v1/views/rename``: admin on both names; 409 if the new name is taken."""
        from icecore.server.app import _identifier

        body = call.body if isinstance(call.body, Mapping) else {}
        source = _identifier(body.get("source"), "'source'")
        destination = _identifier(body.get("destination"), "'destination'")
        check_new_identifier(destination)
        self._require(call, source, Role.ADMIN, "rename views", "view:rename")
        self._require(call, destination, Role.ADMIN, "rename views", "view:rename")
        before = self._loaded(source).metadata_location
        if not self.service.backend.namespace_exists(destination.namespace):
            raise no_such_namespace(destination.namespace)
        self._check_new(
            destination, source.name if source.namespace == destination.namespace else None
        )
        self._name_taken(destination)

        def rename() -> str:
            self.store.rename_view(source, destination)
            return before

        try:
            self.service._recorded(
                call, "view:rename", str(source), before, f"renamed to {destination}", rename
            )
        except Unsupported as e:
            raise RestError(406, "UnsupportedOperationException", str(e)) from None
        return Response(status_code=204)

    def register_view(self, call: Call) -> Any:
        """``POST .../register-view``: a view for an existing view metadata file."""
        from icecore.server.app import namespace_of

        self.service._admin_of(
            call, namespace_of(call.params["namespace"]), "view:register", "register a view in"
        )
        namespace = self.service._existing(call.params["namespace"])
        body = call.body if isinstance(call.body, Mapping) else {}
        name, location = body.get("name"), body.get("metadata-location")
        if not isinstance(name, str) or not isinstance(location, str):
            raise bad_request("A register-view request needs 'name' and 'metadata-location'.")
        plain_text(location, "'metadata-location'")
        identifier = TableIdentifier(namespace, name)
        self._check_new(identifier)
        self.service.locations.require(location, "the metadata file")  # before reading it
        try:
            view = read_view(self.store.io, identifier, location)
        except NotFound as e:
            raise RestError(404, "NotFoundException", str(e)) from None
        except InvalidMetadata as e:
            raise bad_request(str(e)) from None
        self._check_locations(identifier, view.metadata)
        self._name_taken(identifier)

        def register() -> str:
            self.store.register_view(identifier, location)
            return location

        self.service._recorded(
            call, "view:register", str(identifier), None, f"registered {location}", register
        )
        return load_view_result(self._loaded(identifier))


class _CheckedStore:
    """A view store whose commits first check the new metadata's locations (403 if outside)."""

    def __init__(self, inner: ViewStore, check: Any) -> None:
        self.inner = inner
        self.check = check
        self.io = inner.io

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def commit_view(
        self, identifier: TableIdentifier, base_location: str, metadata: ViewMetadata
    ) -> str:
        self.check(metadata)
        return self.inner.commit_view(identifier, base_location, metadata)


def _commit(
    store: Any,
    identifier: TableIdentifier,
    updates: list[Any],
    expected: str | None,
    done: list[View],
) -> str:
    view = commit_view_updates(store, identifier, updates, expected_uuid=expected)
    done.append(view)
    return view.metadata_location


__all__ = ["ViewRoutes", "load_view_result", "no_such_view"]

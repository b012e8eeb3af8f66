"""An Iceberg REST catalog client (OpenAPI spec in apache/iceberg ``open-api/``).

The one module that imports ``requests``. Plain HTTP, no Java: ``GET /v1/config`` first
(server ``defaults`` under and ``overrides`` over the client's properties; ``prefix``;
``endpoints``), then namespaces and tables listed page by page (``pageToken``), tables
loaded with ``loadTable`` (the response carries the metadata itself, its
``metadata-location``, and a ``config`` of storage properties the server vends for this
table: they reach this table's FileIO only), and commits sent as the requirements and
updates Icecore already builds, which the server checks and applies atomically. A commit
whose answer is lost (a 5xx, a broken connection) is looked for by loading the table again
before anything is retried (:meth:`RestCatalog.commit_table`).

Auth: none, a bearer token, or OAuth2 client credentials (``credential`` = ``id:secret``
posted to ``oauth2-server-uri``, default ``<uri>/v1/oauth/tokens``) with the token fetched
again before it expires and once on a 401. Secrets come from the environment or
``icecore.toml`` (see :func:`icecore.catalog.load_catalog`), never from the URI: they are
kept out of ``repr``, :attr:`RestCatalog.uri`, every error message and every log.

Every request has a timeout, every response body a size limit, every listing a page limit:
what a server sends is untrusted.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from icecore.catalog.base import CatalogBase
from icecore.catalog.registry import CatalogSpec
from icecore.catalog.rest_messages import requirements_to_json, updates_to_json
from icecore.catalog.views import View
from icecore.errors import (
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    IcecoreError,
    InvalidMetadata,
    NotFound,
    Unsupported,
    ValidationError,
)
from icecore.identifier import TableIdentifier
from icecore.io import FileIO
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder
from icecore.metadata.requirements import Requirement
from icecore.metadata.serde import parse_metadata_dict, serialize_metadata
from icecore.metadata.updates import MetadataUpdate
from icecore.metadata.view import view_metadata_from_json
from icecore.table import Table
from icecore.values import whole_number

CREDENTIAL_ENV = "ICECORE_REST_CREDENTIAL"
"""``client_id:client_secret`` for a REST catalog opened by its bare URI."""
TOKEN_ENV = "ICECORE_REST_TOKEN"
"""A bearer token for a REST catalog opened by its bare URI."""

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""A metadata.json of a very large table is tens of MB; anything beyond this is refused."""
MAX_PAGES = 10_000
"""Pages of one listing followed at most (a server repeating a page token cannot loop us)."""
MAX_NAMESPACE_DEPTH = 16
ACCESS_DELEGATION = "vended-credentials"
COMMIT_UNKNOWN_STATUSES = frozenset({500, 502, 503, 504})
"""Spec ``CommitTableResponse``: after these the commit may or may not have been applied."""
RELOAD_TRIES = 3
"""Loads tried to look at a table after a commit's outcome was lost."""
_CHANGED_KEYS = (
    "format-version",
    "location",
    "last-column-id",
    "schemas",
    "current-schema-id",
    "partition-specs",
    "default-spec-id",
    "last-partition-id",
    "sort-orders",
    "default-sort-order-id",
    "properties",
    "current-snapshot-id",
    "snapshots",
    "refs",
)
"""What a commit's updates can change: equal on these keys, two versions hold the same change."""
DEFAULT_SCOPE = "catalog"
TOKEN_PATH = "v1/oauth/tokens"

_CLIENT_ONLY = frozenset(
    {"uri", "type", "credential", "token", "credential-env", "token-env", "scope"}
)
"""Entry keys that configure the client itself and never reach a FileIO or the server."""
NOT_ICEBERG = frozenset(
    {"type", "uri", "credential", "token", "credential-env", "token-env", "name"}
)
"""Entry keys that are not Iceberg Java's REST catalog properties (or are set explicitly)."""
HEADER_PREFIX = "header."
"""Properties ``header.NAME`` add an HTTP header to every request (PyIceberg's and Iceberg's)."""


@dataclass(frozen=True, slots=True)
class Secret:
    """A credential or token, with where it came from (named in messages, never the value)."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"Secret(<hidden>, from {self.source})"


def check_uri(uri: str) -> str:
    """The REST catalog's base URI, refused when it carries a secret or a query.

    Raises:
        ValidationError: the URI has ``user:password@`` or a query string in it.
    """
    parts = urlsplit(uri.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("A REST catalog URI must be http(s)://host[:port][/path].")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValidationError(
            "A REST catalog URI must not hold credentials (user:password@); set "
            f"{CREDENTIAL_ENV} or {TOKEN_ENV}, or name an environment variable in icecore.toml."
        )
    if parts.query or parts.fragment:
        raise ValidationError(
            "A REST catalog URI takes no query string; put the warehouse and other properties "
            "in a [catalogs.NAME] entry of icecore.toml."
        )
    return uri.strip().rstrip("/")


def scrub(text: str, secrets: list[str]) -> str:
    """Replace every secret in ``text`` with ``<hidden>``.

    Why word edges for short secrets: replacing a one- or two-character client secret
    everywhere garbles the message ("variable" became "varia<hidden>le" for secret ``b``)
    while hiding nothing, since such a secret inside a longer word is not that secret shown.
    A secret as a whole token (between non-word characters) is always hidden; secrets of
    eight characters or more are hidden wherever they appear.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 8:
            text = text.replace(secret, "<hidden>")
        else:
            edge = rf"(?<![A-Za-z0-9_]){re.escape(secret)}(?![A-Za-z0-9_])"
            text = re.sub(edge, "<hidden>", text)
    return text


def iceberg_rest_properties(
    uri: str,
    properties: Mapping[str, str],
    *,
    credential: str | None = None,
    token: str | None = None,
) -> dict[str, str]:
    """Iceberg Java's REST catalog properties for the server at ``uri``, secrets included.

    ``properties`` are an entry's other properties (``warehouse``, ``scope``,
    ``oauth2-server-uri``, ``s3.*``, ``header.*``, ...), passed through as Iceberg's
    RESTCatalog takes them. With a ``credential`` (``client_id:client_secret``) the token
    endpoint is named explicitly, defaulting to the catalog's own ``/v1/oauth/tokens`` as
    Icecore's client does (Iceberg Java warns when it has to guess).
    """
    base = uri.rstrip("/")
    out = {"type": "rest", "uri": base}
    out |= {k: v for k, v in properties.items() if k not in NOT_ICEBERG and v != ""}
    if credential is not None:
        out["credential"] = credential
        out.setdefault("oauth2-server-uri", f"{base}/{TOKEN_PATH}")
    if token is not None:
        out["token"] = token
    return out


class RestCatalog(CatalogBase):
    """A catalog behind the Iceberg REST protocol.

    Args:
        uri: the server's base URI (``http(s)://host:port/path``), without secrets.
        properties: client properties (``warehouse``, ``oauth2-server-uri``, ``scope``,
            ``rest.page-size``, ``s3.*`` for the FileIO, ...).
        credential: OAuth2 client credentials ``id:secret``.
        token: a bearer token (used as is; a credential, if given, wins on a 401).
        name: the ``[catalogs.NAME]`` entry it was opened by, if any (then :attr:`uri`).
        read_only: refuse commits (``ICECORE_READ_ONLY``), whatever the server would allow.
    """

    kind = "rest"
    loads_whole_tables = True

    def __init__(
        self,
        uri: str,
        properties: Mapping[str, str] | None = None,
        *,
        credential: Secret | None = None,
        token: Secret | None = None,
        name: str | None = None,
        read_only: bool = False,
    ) -> None:
        self.read_only = read_only
        self._base = check_uri(uri)
        self._name = name
        self._credential = credential
        self._secrets = [s.value for s in (credential, token) if s is not None]
        self._secrets += [p for s in self._secrets for p in s.split(":", 1)[1:] if p]
        self._token = token.value if token is not None else None
        self._initial_token = self._token
        self._token_expires: float | None = None
        self._lock = threading.Lock()
        self._session = _session()
        self._session.headers["X-Iceberg-Access-Delegation"] = ACCESS_DELEGATION
        self._session.headers["User-Agent"] = "icecore"
        for key, value in (properties or {}).items():
            if key.startswith(HEADER_PREFIX) and key != HEADER_PREFIX and value:
                self._session.headers[key[len(HEADER_PREFIX) :]] = value
                self._secrets.append(value)  # an API key header is a secret too
        self._entry = {k: v for k, v in (properties or {}).items() if k not in NOT_ICEBERG}
        client = {
            k: v
            for k, v in (properties or {}).items()
            if k not in _CLIENT_ONLY and not k.startswith(HEADER_PREFIX)
        }
        self._scope = (properties or {}).get("scope") or DEFAULT_SCOPE
        self._token_uri = (properties or {}).get("oauth2-server-uri") or (
            f"{self._base}/{TOKEN_PATH}"
        )
        if self._credential is not None:
            self._fetch_token()
        config = self._config(client.get("warehouse"))
        self.properties: Mapping[str, str] = {
            **_strings(config.get("defaults")),
            **client,
            **_strings(config.get("overrides")),
        }
        if "uri" in self.properties:
            check_uri(self.properties["uri"])  # a server may move us; never to a secret URI
            self._base = self.properties["uri"].rstrip("/")
        prefix = self.properties.get("prefix", "").strip("/")
        self._root = f"{self._base}/v1/{prefix}/" if prefix else f"{self._base}/v1/"
        endpoints = config.get("endpoints")
        self._endpoints = (
            frozenset(str(e) for e in endpoints) if isinstance(endpoints, list) else None
        )
        page_size = self.properties.get("rest.page-size")
        self._page_size = whole_number(page_size, negative=False) if page_size else None
        self.io = FileIO(self._io_properties({}))

    # Identity and repr: never a secret --------------------------------------------------

    @property
    def uri(self) -> str:
        """The string that opens this catalog again: its name, else its base URI."""
        return self._name if self._name is not None else self._base

    def __repr__(self) -> str:
        return f"RestCatalog({self.uri!r})"

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """Iceberg Java's REST catalog on the same server with the same secrets (any name)."""
        return None, iceberg_rest_properties(
            self._base,
            self._entry,
            credential=self._credential.value if self._credential is not None else None,
            token=self._initial_token,
        )

    # HTTP -------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _where(self) -> str:
        return f"the REST catalog {self.uri}"

    def _fetch_token(self) -> None:
        """Exchange the client credential for a token (OAuth2 client credentials grant)."""
        assert self._credential is not None
        client_id, _, client_secret = self._credential.value.partition(":")
        form = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": client_secret,
            "scope": self._scope,
        }
        try:
            response = self._session.post(
                self._token_uri,
                data=form,
                timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                stream=True,
                allow_redirects=False,
            )
            body = _read(response)
        except requests.RequestException as e:
            raise CatalogUnavailable(
                f"Cannot reach the token endpoint of {self._where()} "
                f"({type(e).__name__}); check that the server is up."
            ) from None
        if response.is_redirect or 300 <= response.status_code < 400:
            raise CatalogUnavailable(
                f"The token endpoint of {self._where()} answered a redirect "
                f"({response.status_code}); the client credential is never re-sent to "
                "another address, so set oauth2-server-uri to the final token URL."
            )
        data = _json_object(body)
        if response.status_code != 200 or not isinstance(data.get("access_token"), str):
            reason = data.get("error") or data.get("error_description") or response.status_code
            raise CatalogUnavailable(
                self._scrub(
                    f"The REST catalog {self.uri} refused the client credential from "
                    f"{self._credential.source} ({reason}); check the id and secret there."
                )
            )
        self._token = data["access_token"]
        expires_in = data.get("expires_in")
        if isinstance(expires_in, int | float) and expires_in > 0:
            margin = min(60.0, float(expires_in) / 5.0)
            self._token_expires = time.monotonic() + float(expires_in) - margin
        else:
            self._token_expires = None

    def _headers(self) -> dict[str, str]:
        with self._lock:
            if (
                self._credential is not None
                and self._token_expires is not None
                and time.monotonic() >= self._token_expires
            ):
                self._fetch_token()
            return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        commit: bool = False,
    ) -> tuple[int, Any]:
        """One call; a 401 fetches a new token once (a credential is needed for that).

        Returns the status and the decoded JSON body (None when empty).

        Raises:
            CommitStateUnknown: ``commit`` and the reply was lost after the request was sent.
            CatalogUnavailable: the server cannot be reached or refuses the caller.
        """
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            headers = self._headers()
            if data is not None:
                headers["Content-Type"] = "application/json"
            try:
                response = self._session.request(
                    method,
                    url,
                    params=params,
                    data=data,
                    headers=headers,
                    timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                    stream=True,
                    allow_redirects=False,
                )
                raw = _read(response)
            except requests.RequestException as e:
                sent = not isinstance(e, requests.ConnectTimeout) and not _refused_connection(e)
                if commit and sent:
                    raise CommitStateUnknown(
                        f"The connection to {self._where()} broke after the commit was sent "
                        f"({type(e).__name__}); load the table again and look before "
                        "retrying."
                    ) from None
                raise CatalogUnavailable(
                    f"Cannot reach {self._where()} ({type(e).__name__}); check that the "
                    "server is up and the URI is right."
                ) from None
            if response.status_code == 401 and attempt == 1 and self._credential is not None:
                with self._lock:
                    self._fetch_token()
                continue
            return response.status_code, _json_or_none(raw)
        raise AssertionError("unreachable")

    def _sentence(self, status: int, body: Any, what: str) -> str:
        """What the server said, from the spec's ``ErrorModel`` when it sent one."""
        error = body.get("error") if isinstance(body, dict) else None
        kind = message = None
        if isinstance(error, dict):
            kind, message = error.get("type"), error.get("message")
        detail = ": ".join(str(x) for x in (kind, message) if x) or f"HTTP {status}"
        return self._scrub(f"The REST catalog {self.uri} answered {what} with {detail}"[:2000])

    def _error(self, status: int, body: Any, what: str) -> IcecoreError:
        """The server's refusal as one sentence of the matching kind."""
        sentence = self._sentence(status, body, what)
        if status == 404:
            return NotFound(f"{sentence}.")
        if status in (401, 403):
            if self._credential is not None:
                hint = f"check the credential in {self._credential.source}"
            else:
                hint = _auth_hint()
            return CatalogUnavailable(f"{sentence}; {hint}.")
        if status in (400, 422):
            return ValidationError(f"{sentence}.")
        if status in (406, 501):
            return Unsupported(f"{sentence}.")
        return CatalogUnavailable(f"{sentence}; try again later.")

    def _call(self, method: str, path: str, what: str, **kw: Any) -> Any:
        status, body = self._request(method, self._root + path, **kw)
        if status >= 300:
            raise self._error(status, body, what)
        return body

    def _config(self, warehouse: str | None) -> Mapping[str, Any]:
        params = {"warehouse": warehouse} if warehouse else None
        status, body = self._request("GET", f"{self._base}/v1/config", params=params)
        if status != 200:
            raise self._error(status, body, "GET /v1/config")
        return _json_object_value(body, f"The /v1/config answer of {self._where()}")

    def _require(self, endpoint: str) -> None:
        if self._endpoints is not None and endpoint not in self._endpoints:
            raise Unsupported(f"The REST catalog {self.uri} does not offer {endpoint}.")

    # Namespaces and tables --------------------------------------------------------------

    def _pages(self, path: str, key: str, what: str, params: Mapping[str, str]) -> list[Any]:
        items: list[Any] = []
        token: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            query = dict(params)
            if self._page_size is not None:
                query["pageSize"] = str(self._page_size)
            if token is not None:
                query["pageToken"] = token
            body = _json_object_value(self._call("GET", path, what, params=query), what)
            page = body.get(key)
            if not isinstance(page, list):
                raise InvalidMetadata(
                    f"The REST catalog {self.uri} answered {what} without a {key} list."
                )
            items.extend(page)
            nxt = body.get("next-page-token")
            if not isinstance(nxt, str) or not nxt:
                return items
            if nxt in seen:
                raise InvalidMetadata(
                    f"The REST catalog {self.uri} repeated a page token in {what}."
                )
            seen.add(nxt)
            token = nxt
        raise InvalidMetadata(
            f"The REST catalog {self.uri} sent more than {MAX_PAGES} pages for {what}."
        )

    def _children(self, parent: tuple[str, ...]) -> list[tuple[str, ...]]:
        self._require("GET /v1/{prefix}/namespaces")
        # A query value is encoded by requests: levels joined by the raw unit separator.
        params = {"parent": "\x1f".join(parent)} if parent else {}
        raw = self._pages("namespaces", "namespaces", "GET namespaces", params)
        out = []
        for ns in raw:
            if not isinstance(ns, list) or not ns or not all(isinstance(p, str) for p in ns):
                raise InvalidMetadata(f"The REST catalog {self.uri} listed a malformed namespace.")
            out.append(tuple(ns))
        return out

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace, nested ones included, sorted."""
        found: list[tuple[str, ...]] = []
        todo: list[tuple[str, ...]] = [()]
        while todo:
            parent = todo.pop()
            if len(parent) >= MAX_NAMESPACE_DEPTH:
                continue
            for child in self._children(parent):
                if len(child) > len(parent) and child[: len(parent)] == parent:
                    found.append(child)
                    todo.append(child)
        return sorted(set(found))

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Tables in ``namespace`` (every namespace when None), sorted."""
        self._require("GET /v1/{prefix}/namespaces/{namespace}/tables")
        return self._identifiers(namespace, "tables", "table")

    def _identifiers(
        self, namespace: tuple[str, ...] | None, route: str, kind: str
    ) -> list[TableIdentifier]:
        """The ``identifiers`` a listing route pages through (``tables`` or ``views``), sorted."""
        namespaces = [namespace] if namespace is not None else self.list_namespaces()
        found: list[TableIdentifier] = []
        for ns in namespaces:
            path = f"namespaces/{_namespace_path(ns)}/{route}"
            for entry in self._pages(path, "identifiers", f"GET {route}", {}):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise InvalidMetadata(
                        f"The REST catalog {self.uri} listed a malformed {kind} identifier."
                    )
                entry_ns = entry.get("namespace")
                found.append(
                    TableIdentifier(
                        tuple(entry_ns) if isinstance(entry_ns, list) else ns, entry["name"]
                    )
                )
        return sorted(found)

    def _load(self, identifier: TableIdentifier) -> tuple[str, TableMetadata, dict[str, str]]:
        self._require("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}")
        body = self._call("GET", _table_path(identifier), f"loadTable {identifier}")
        return self._table_response(body, identifier)

    def _table_response(
        self, body: Any, identifier: TableIdentifier
    ) -> tuple[str, TableMetadata, dict[str, str]]:
        what = f"{self._where()}'s table {identifier}"
        obj = _json_object_value(body, what)
        location = obj.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise InvalidMetadata(f"In {what}, loadTable has no metadata-location (staged?).")
        metadata = parse_metadata_dict(obj.get("metadata"), location)
        return location, metadata, _strings(obj.get("config"))

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """The table's current metadata.json, as the server's loadTable reports it."""
        return self._load(identifier)[0]

    def _io_properties(self, table_config: Mapping[str, str]) -> dict[str, str]:
        return {**self.properties, **table_config}

    def load_table(self, identifier: str | TableIdentifier) -> Table:
        """The table's current version, read with this table's vended storage properties."""
        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else TableIdentifier.parse(identifier)
        )
        location, metadata, config = self._load(ident)
        io = FileIO(self._io_properties(config)) if config else self.io
        return Table(ident, metadata, location, io, self)

    # Views (issue 35) -------------------------------------------------------------------

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Views in ``namespace`` (every namespace when None), sorted; none where not served.

        A server whose ``/v1/config`` lists endpoints without ``listViews`` keeps no views
        (a catalog without view support): it has none to list.
        """
        endpoint = "GET /v1/{prefix}/namespaces/{namespace}/views"
        if self._endpoints is not None and endpoint not in self._endpoints:
            return []
        return self._identifiers(namespace, "views", "view")

    def load_view(self, identifier: str | TableIdentifier) -> View:
        """The view's ``LoadViewResult``: its metadata location and metadata."""
        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else TableIdentifier.parse(identifier)
        )
        self._require("GET /v1/{prefix}/namespaces/{namespace}/views/{view}")
        path = f"namespaces/{_namespace_path(ident.namespace)}/views/{quote(ident.name, safe='')}"
        body = self._call("GET", path, f"loadView {ident}")
        what = f"{self._where()}'s view {ident}"
        obj = _json_object_value(body, what)
        location = obj.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise InvalidMetadata(f"In {what}, loadView has no metadata-location.")
        return View(ident, location, view_metadata_from_json(obj.get("metadata"), location))

    # Commits ----------------------------------------------------------------------------

    def commit_table(
        self,
        fresh: Table,
        requirements: Sequence[Requirement],
        updates: Sequence[MetadataUpdate],
    ) -> Table:
        """Send one ``CommitTableRequest``; the server checks and applies it atomically.

        When the answer is lost (500/502/503/504, or the connection broke after the request
        was sent) the table is loaded again and looked at, as the issue asks ("reload and look
        before any retry"): still at ``fresh``'s version, the commit was not applied and is
        sent once more (its requirements hold: nothing changed); one commit further, from
        ``fresh``'s version, holding exactly what the updates make, it was applied. Anything
        else cannot be told apart from another writer's change, so it is reported, never
        guessed.

        Raises:
            CommitConflict: 409, a requirement failed on the server (retryable: the caller
                loads the table and checks the requirements again).
            CommitStateUnknown: the answer was lost and looking could not decide.
            IcecoreError: any other refusal, as one sentence with the server's words.
        """
        ident = fresh.identifier
        if self.read_only:
            raise ValidationError(
                f"Cannot commit to {ident}: {self._where()} was opened read-only "
                "(ICECORE_READ_ONLY or read_only=True); open it read-write to commit."
            )
        self._require("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}")
        request = {
            "identifier": {"namespace": list(ident.namespace), "name": ident.name},
            "requirements": requirements_to_json(requirements, fresh.metadata),
            "updates": updates_to_json(updates),
        }
        try:
            return self._send_commit(fresh, request)
        except CommitStateUnknown as unknown:
            looked = self._look_after_unknown(fresh, updates, unknown)
        if looked is not None:
            return looked
        try:
            return self._send_commit(fresh, request)
        except CommitStateUnknown as again:
            raise CommitStateUnknown(
                f"{again} (This was the one retry, sent after {ident} was found unchanged.)"
            ) from None

    def _send_commit(self, fresh: Table, request: Mapping[str, Any]) -> Table:
        """One ``POST`` of the commit; its answer as a table or an error."""
        ident = fresh.identifier
        what = f"the commit to {ident}"
        status, body = self._request(
            "POST", self._root + _table_path(ident), body=request, commit=True
        )
        if status == 409:
            raise CommitConflict(f"{self._sentence(status, body, what)}.")
        if status in COMMIT_UNKNOWN_STATUSES:
            raise CommitStateUnknown(
                f"{self._sentence(status, body, what)}; whether it was applied is unknown: "
                "load the table again and look before retrying."
            )
        if status >= 300:
            raise self._error(status, body, what)
        location, metadata, config = self._table_response(body, ident)
        io = FileIO(self._io_properties(config)) if config else fresh.io
        return Table(ident, metadata, location, io, self)

    def _look_after_unknown(
        self, fresh: Table, updates: Sequence[MetadataUpdate], unknown: CommitStateUnknown
    ) -> Table | None:
        """After a lost answer: the table holding the commit, or None if it was not applied.

        Raises:
            CommitStateUnknown: the table cannot be loaded, or it moved on in a way that does
                not tell whether this commit is in it.
        """
        ident = fresh.identifier
        loaded: tuple[str, TableMetadata, dict[str, str]] | None = None
        for attempt in range(RELOAD_TRIES):
            try:
                loaded = self._load(ident)
                break
            except IcecoreError:
                time.sleep(0.2 * (attempt + 1))
        if loaded is None:
            raise CommitStateUnknown(
                f"{unknown} Loading {ident} again to look failed as well; load it later and "
                "look before retrying."
            ) from None
        location, metadata, config = loaded
        if location == fresh.metadata_location:
            return None
        log = metadata.metadata_log
        if log and log[-1].metadata_file == fresh.metadata_location:
            try:
                expected = serialize_metadata(
                    MetadataBuilder(fresh.metadata)
                    .apply_all(updates)
                    .build(previous_location=fresh.metadata_location)
                )
            except IcecoreError:  # validated before sending; if not, nothing to compare with
                expected = {}
            found = serialize_metadata(metadata)
            if expected and all(expected.get(k) == found.get(k) for k in _CHANGED_KEYS):
                io = FileIO(self._io_properties(config)) if config else fresh.io
                return Table(ident, metadata, location, io, self)
        raise CommitStateUnknown(
            f"{unknown} Looking again found {ident} changed since {fresh.metadata_location} "
            f"(now {location}) in a way that does not tell whether this commit is in it; "
            "check the table's history before making the change again."
        ) from None

    def commit_metadata(
        self,
        identifier: TableIdentifier,
        base_location: str,
        metadata: TableMetadata,
        payload: bytes,
    ) -> str:
        """Refused: a REST catalog commits updates (:meth:`commit_table`), not files."""
        raise Unsupported(
            f"The REST catalog {self.uri} commits changes as updates, not metadata files; "
            "commit through the table's update methods."
        )


# Helpers ---------------------------------------------------------------------------------


def _auth_hint() -> str:
    return f"set {CREDENTIAL_ENV} or {TOKEN_ENV}, or name one in icecore.toml"


def _namespace_path(namespace: tuple[str, ...]) -> str:
    """A namespace as one path segment: levels URL-encoded and joined by ``%1F``."""
    return "%1F".join(quote(level, safe="") for level in namespace)


def _table_path(identifier: TableIdentifier) -> str:
    return (
        f"namespaces/{_namespace_path(identifier.namespace)}/tables/"
        f"{quote(identifier.name, safe='')}"
    )


def _session() -> requests.Session:
    """A session that takes nothing from the environment but a CA bundle.

    Why: requests' default (``trust_env``) silently adds ``~/.netrc`` passwords as Basic auth
    and routes every call, bearer token and client secret included, through whatever
    ``HTTP(S)_PROXY``/``ALL_PROXY`` the process inherited. The catalog's URI and secrets are
    configured explicitly (icecore.toml, ``ICECORE_REST_*``); only the CA bundle variables,
    which say whom to trust and send nothing anywhere, are still honoured.
    """
    session = requests.Session()
    session.trust_env = False
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    return session


def _read(response: requests.Response) -> bytes:
    """The body, refused beyond :data:`MAX_RESPONSE_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_content(chunk_size=1 << 16):
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise InvalidMetadata(
                    f"A REST catalog response exceeded {MAX_RESPONSE_BYTES} bytes; refused."
                )
            chunks.append(chunk)
    finally:
        response.close()
    return b"".join(chunks)


def _refused_connection(error: requests.RequestException) -> bool:
    """Whether the request never left (connection refused, DNS): safe to call not sent."""
    if not isinstance(error, requests.ConnectionError):
        return False
    text = repr(error.args)
    return "NewConnectionError" in text or "NameResolutionError" in text


def _json_or_none(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: a hostile answer nested deep
        return None


def _json_object(raw: bytes) -> dict[str, Any]:
    value = _json_or_none(raw)
    return value if isinstance(value, dict) else {}


def _json_object_value(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidMetadata(f"{what} is not a JSON object.")
    return value


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}


def open_rest_catalog(
    uri: str,
    entry: Mapping[str, str] | None = None,
    name: str | None = None,
    *,
    read_only: bool = False,
    source: str = "icecore.toml",
) -> RestCatalog:
    """Open a REST catalog from a bare URI (secrets from the environment) or an entry.

    A bare URI takes ``ICECORE_REST_CREDENTIAL`` (``id:secret``) or ``ICECORE_REST_TOKEN``. An
    entry takes ``credential-env``/``token-env`` (the names of environment variables), or
    ``credential``/``token`` written in its ``source`` (icecore.toml, PyIceberg's
    configuration) itself.

    Raises:
        ValidationError: the URI holds a secret, or an entry names an unset variable.
    """
    properties = dict(entry or {})
    credential = _secret(
        properties, "credential", None if entry is not None else CREDENTIAL_ENV, source
    )
    token = _secret(properties, "token", None if entry is not None else TOKEN_ENV, source)
    if credential is not None and ":" not in credential.value:
        raise ValidationError(
            f"The REST credential from {credential.source} must be client_id:client_secret."
        )
    return RestCatalog(
        check_uri(uri),
        properties,
        credential=credential,
        token=token,
        name=name,
        read_only=read_only,
    )


def load_rest(spec: CatalogSpec) -> RestCatalog:
    """The registry's loader: an ``http(s)://`` URI, bare or with an entry's properties."""
    return open_rest_catalog(
        spec.uri,
        spec.properties or None,
        name=spec.name,
        read_only=spec.read_only,
        source=spec.source,
    )


def _secret(
    properties: Mapping[str, str], key: str, default_env: str | None, source: str
) -> Secret | None:
    env = properties.get(f"{key}-env") or default_env
    if env is not None:
        value = os.environ.get(env, "").strip()
        if value:
            return Secret(value, f"the environment variable {env}")
        if properties.get(f"{key}-env"):
            raise ValidationError(
                f"The environment variable {env} named by {key}-env is not set; set it to the "
                f"catalog's {key}."
            )
    inline = properties.get(key, "").strip()
    if inline:
        return Secret(inline, source)
    return None


__all__ = [
    "CREDENTIAL_ENV",
    "TOKEN_ENV",
    "RestCatalog",
    "Secret",
    "check_uri",
    "iceberg_rest_properties",
    "load_rest",
    "open_rest_catalog",
]

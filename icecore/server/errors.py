"""The REST protocol's ``ErrorModel``: every failure the server answers, as the spec shapes it.

The spec ("ErrorModel", "IcebergErrorResponse") answers ``{"error": {"message", "type",
"code"}}``; clients choose their exception by the HTTP code and, for 404 and 409, by
``type`` (``NoSuchNamespaceException`` vs ``NoSuchTableException``, ``CommitFailedException``
vs ``AlreadyExistsException``), the names Iceberg Java's ``ErrorHandlers`` and PyIceberg's
``RestCatalog`` read. Icecore's own errors map onto them here, in one place; anything else is
a 500 whose message names no internals (the traceback goes to the server log only).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import JSONResponse

from icecore.errors import (
    AlreadyExists,
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    Forbidden,
    IcecoreError,
    NamespaceNotEmpty,
    NotFound,
)

MAX_MESSAGE = 2000
"""Characters of a message sent back; a message quoting user input stays bounded."""


@dataclass(frozen=True)
class RestError(Exception):
    """A failure answered as an ``ErrorModel``.

    Attributes:
        code: the HTTP status.
        type: the error type clients dispatch on (Iceberg Java's exception names).
        message: one sentence for the user.
    """

    code: int
    type: str
    message: str

    def response(self) -> JSONResponse:
        """The ``IcebergErrorResponse`` body with this status."""
        return error_response(self.code, self.type, self.message)


def error_response(code: int, kind: str, message: str) -> JSONResponse:
    """``{"error": {"message", "type", "code"}}`` with status ``code``."""
    text = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"
    return JSONResponse({"error": {"message": text, "type": kind, "code": code}}, code)


def bad_request(message: str) -> RestError:
    """A 400: the request is malformed or asks for what the server does not do."""
    return RestError(400, "BadRequestException", message)


def no_such_namespace(namespace: tuple[str, ...]) -> RestError:
    """A 404 naming the namespace."""
    return RestError(
        404, "NoSuchNamespaceException", f"Namespace does not exist: {_dot(namespace)}"
    )


def no_such_table(identifier: object) -> RestError:
    """A 404 naming the table (also when its namespace is missing, as Iceberg Java answers)."""
    return RestError(404, "NoSuchTableException", f"Table does not exist: {identifier}")


def plain_text(value: str, what: str) -> str:
    """``value`` if it holds no control character (NUL, newline, ...), else a 400.

    A path or URL with a NUL reaches ``os`` functions that raise ValueError (a 500);
    no storage location needs a control character, so they are refused up front.
    """
    bad = next((c for c in value if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise bad_request(f"{what} contains the control character {bad!r}.")
    return value


def _dot(parts: tuple[str, ...]) -> str:
    return ".".join(parts)


def from_icecore(error: IcecoreError, *, not_found: str = "NoSuchTableException") -> RestError:
    """The ``ErrorModel`` for an Icecore error.

    Args:
        error: what the catalog raised.
        not_found: the type a :class:`NotFound` takes here (a table route's 404 names a table).
    """
    message = str(error) or type(error).__name__
    match error:
        case Forbidden():
            # A missing grant (DESIGN.md "Identity, roles and audit"): the same sentence
            # whether or not the table exists, so a 403 never reveals existence.
            return RestError(403, "ForbiddenException", message)
        case NotFound():
            return RestError(404, not_found, message)
        case AlreadyExists():
            return RestError(409, "AlreadyExistsException", message)
        case NamespaceNotEmpty():
            return RestError(409, "NamespaceNotEmptyException", message)
        case CommitConflict():
            return RestError(409, "CommitFailedException", f"Commit failed: {message}")
        case CommitStateUnknown():
            return RestError(500, "CommitStateUnknownException", message)
        case CatalogUnavailable():
            return RestError(503, "ServiceUnavailableException", message)
    return bad_request(message)


__all__ = [
    "RestError",
    "bad_request",
    "error_response",
    "from_icecore",
    "no_such_namespace",
    "no_such_table",
    "plain_text",
]

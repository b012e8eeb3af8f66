"""One exception tree for everything Icecore raises on purpose.

Callers (pages, the CLI) catch :class:`IcecoreError` only; each subclass names a kind of
failure a user can act on. Messages are one sentence: what, where, what to do.
"""

from __future__ import annotations


class IcecoreError(Exception):
    """Base of every error Icecore raises deliberately.

    Attributes:
        retryable: whether repeating the same call may succeed (only commit conflicts are).
    """

    retryable: bool = False


class NotFound(IcecoreError):
    """A catalog, namespace, table, snapshot, ref or file does not exist."""


class InvalidMetadata(IcecoreError):
    """Metadata (JSON, Avro, Parquet footer, Puffin) is corrupt, truncated or breaks the spec."""


class Unsupported(IcecoreError):
    """Valid input that Icecore does not handle yet (for example format-version 4)."""


class FilterError(IcecoreError):
    """A filter expression could not be parsed or bound to the table's schema."""


class ValidationError(IcecoreError):
    """A requested change (evolution, property) breaks a rule of the spec or of the table."""


class AlreadyExists(ValidationError):
    """A namespace or table of that name exists already (create, rename, register)."""


class NamespaceNotEmpty(ValidationError):
    """A namespace cannot be dropped: it still holds tables or namespaces."""


class CommitConflict(IcecoreError):
    """The table changed under a commit in a way that conflicts with it; retry on a fresh base."""

    retryable = True


class CommitStateUnknown(IcecoreError):
    """A commit may or may not have been applied; the written metadata file is kept.

    Attributes:
        metadata_location: the metadata file the commit wrote, when known; loading the table
            later tells whether it became current (or entered the metadata log).
    """

    def __init__(self, message: str, metadata_location: str | None = None) -> None:
        super().__init__(message)
        self.metadata_location = metadata_location


class CatalogUnavailable(IcecoreError):
    """A catalog server cannot be reached, or it refuses the connection (credentials, rights)."""


class Forbidden(IcecoreError):
    """The signed-in principal's role does not allow this action on this table or namespace.

    The message is one sentence naming the action, the role it needs and the role held; it never
    says whether a table the principal cannot see exists (DESIGN.md "Identity, roles and audit").
    """

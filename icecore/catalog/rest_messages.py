"""Icecore's commit updates and requirements as the REST catalog's JSON.

The JSON of each update and requirement is :mod:`icecore.metadata.updates_json`'s (the
server reads with the same module); what is client-specific is here. Ids the server assigns
are sent as the spec allows: an added schema, spec or sort order is reassigned an id by the
server (Iceberg Java reuses an identical one), and
``-1`` in ``set-current-schema``/``set-default-spec``/``set-default-sort-order`` means "the
one added last in this commit", exactly as :data:`~icecore.metadata.updates.LAST_ADDED`.

:class:`~icecore.metadata.requirements.AssertNoLiveFilesInSpecs` has no REST counterpart:
it is checked by the client on the freshly loaded table, and the commit then asserts that
no branch or tag moved since (``assert-ref-snapshot-id`` for each), so an append that could
have added such files in between makes the server refuse the commit (409) and the client
check again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icecore.metadata import TableMetadata
from icecore.metadata.requirements import (
    AssertNoLiveFilesInSpecs,
    AssertRefSnapshotId,
    AssertTableUUID,
    Requirement,
)
from icecore.metadata.updates_json import requirement_to_json, update_to_json, updates_to_json


def requirements_to_json(
    requirements: Iterable[Requirement], fresh: TableMetadata
) -> list[dict[str, Any]]:
    """The ``TableRequirement`` list of a commit computed under ``requirements``.

    Args:
        requirements: what the updates were computed under.
        fresh: the table as loaded right before this attempt (refs pinned, see the module).
    """
    out: list[dict[str, Any]] = []
    pin_refs = False
    for requirement in requirements:
        if isinstance(requirement, AssertNoLiveFilesInSpecs):
            pin_refs = True
        elif not (isinstance(requirement, AssertTableUUID) and requirement.uuid is None):
            out.append(requirement_to_json(requirement))
    if pin_refs:
        out.extend(requirement_to_json(r) for r in _pinned_refs(fresh))
    return out


def _pinned_refs(md: TableMetadata) -> list[AssertRefSnapshotId]:
    refs = {name: ref.snapshot_id for name, ref in md.refs.items()}
    if not refs:
        return [AssertRefSnapshotId("main", md.current_snapshot_id)]
    return [AssertRefSnapshotId(name, sid) for name, sid in sorted(refs.items())]


__all__ = ["requirements_to_json", "update_to_json", "updates_to_json"]

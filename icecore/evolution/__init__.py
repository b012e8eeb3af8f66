"""Guarded evolution commits: schema, partition spec, sort order and property changes.

Builders compute metadata updates and the requirements under which they apply
(:mod:`~icecore.evolution.schema`, :mod:`~icecore.evolution.spec`,
:mod:`~icecore.evolution.sort`, :mod:`~icecore.evolution.properties`); a
:class:`~icecore.evolution.transaction.Transaction` stages them; :mod:`~icecore.evolution.commit`
validates, writes and swaps, retrying where the requirements still hold.
"""

from __future__ import annotations

from icecore.evolution.commit import RetryPolicy, commit_updates, live_spec_ids
from icecore.evolution.preview import Preview
from icecore.evolution.properties import UpdateProperties
from icecore.evolution.schema import UpdateSchema
from icecore.evolution.sort import UpdateSortOrder
from icecore.evolution.spec import UpdateSpec
from icecore.evolution.transaction import Transaction, transaction_of
from icecore.evolution.type_text import parse_type

__all__ = [
    "Preview",
    "RetryPolicy",
    "Transaction",
    "UpdateProperties",
    "UpdateSchema",
    "UpdateSortOrder",
    "UpdateSpec",
    "commit_updates",
    "live_spec_ids",
    "parse_type",
    "transaction_of",
]

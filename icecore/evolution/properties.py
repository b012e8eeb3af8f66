"""UpdateProperties: set and remove table properties ("Table Metadata Fields": ``properties``).

Properties Iceberg derives from the metadata itself (``format-version``, ``uuid``,
``current-snapshot-id``, ...) are reserved and refused
(:data:`icecore.metadata.builder.RESERVED_PROPERTIES`). Property changes commute with every
other change, so they only require that the table is still the same table (its uuid); a
concurrent writer setting the same key loses or wins by commit order, as in Iceberg Java.
"""

from __future__ import annotations

from collections.abc import Mapping

from icecore.errors import ValidationError
from icecore.evolution.base import PendingUpdate, Plan, Stage
from icecore.metadata.builder import RESERVED_PROPERTIES
from icecore.metadata.requirements import AssertTableUUID
from icecore.metadata.updates import MetadataUpdate, RemoveProperties, SetProperties


class UpdateProperties(PendingUpdate):
    """Properties to set and to remove, committed together.

    Args:
        transaction: where the change is staged.
    """

    def __init__(self, transaction: Stage) -> None:
        super().__init__(transaction)
        self._sets: dict[str, str] = {}
        self._removals: list[str] = []

    def set(self, key: str, value: str) -> UpdateProperties:
        """Set ``key`` to ``value``.

        Raises:
            ValidationError: the key is reserved, empty, or also being removed.
        """
        _check_key(key)
        if not isinstance(value, str):
            raise ValidationError(f"Property {key!r} must be set to a string, not {value!r}.")
        if key in self._removals:
            raise ValidationError(f"Property {key!r} cannot be both set and removed.")
        self._sets[key] = value
        return self

    def set_properties(
        self, properties: Mapping[str, str] | None = None, /, **more: str
    ) -> UpdateProperties:
        """Set several properties."""
        for key, value in {**(properties or {}), **more}.items():
            self.set(key, value)
        return self

    def remove(self, *keys: str) -> UpdateProperties:
        """Remove properties (keys the table does not have are ignored).

        Raises:
            ValidationError: a key is reserved, or also being set.
        """
        for key in keys:
            _check_key(key)
            if key in self._sets:
                raise ValidationError(f"Property {key!r} cannot be both set and removed.")
            self._removals.append(key)
        return self

    def plan(self) -> Plan:
        """``set-properties`` and ``remove-properties`` for what actually changes."""
        current = self._base.properties
        sets = {k: v for k, v in self._sets.items() if current.get(k) != v}
        removals = tuple(k for k in self._removals if k in current)
        updates: list[MetadataUpdate] = []
        if sets:
            updates.append(SetProperties(sets))
        if removals:
            updates.append(RemoveProperties(removals))
        if not updates:
            return (), ()
        return tuple(updates), (AssertTableUUID(self._base.table_uuid),)


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValidationError(f"Property keys are non-empty strings, not {key!r}.")
    if key in RESERVED_PROPERTIES:
        raise ValidationError(
            f"Property {key!r} is reserved: Iceberg derives it from the metadata, so it cannot "
            "be set or removed."
        )


__all__ = ["UpdateProperties"]

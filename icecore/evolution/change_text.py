"""Evolution changes written as one line of text, for the CLI: ``add_column note string``.

A line is a verb, the builder method of the same name (PyIceberg's names), followed by its
arguments as shell words: positional values, ``key=value`` keywords, and bare flags for
boolean options. For example::

    add_column location.zip string doc='Postal code'
    add_column tier string required default=basic        (v3: required needs a default)
    rename_column fare fare_amount
    update_column passenger_count long
    delete_column legacy_flag
    move_after note fare_amount
    set_identifier_fields trip_id
    add_field pickup_ts day          add_field trip_id bucket[16] trip_bucket
    remove_field pickup_ts_hour      rename_field vendor_id vendor
    asc pickup_ts                    desc fare month nulls-first

``default=`` and :meth:`set_default_value` values are read as JSON when they parse
(``5``, ``true``, ``"text"``), else taken as text (``2024-01-01``).
"""

from __future__ import annotations

import inspect
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icecore.errors import ValidationError
from icecore.evolution.schema import UpdateSchema
from icecore.evolution.sort import UpdateSortOrder
from icecore.evolution.spec import UpdateSpec

if TYPE_CHECKING:
    from icecore.evolution.transaction import Transaction

SCHEMA_VERBS = (
    "add_column",
    "delete_column",
    "rename_column",
    "update_column",
    "update_column_doc",
    "make_column_optional",
    "make_column_required",
    "set_default_value",
    "move_first",
    "move_before",
    "move_after",
    "set_identifier_fields",
)
SPEC_VERBS = ("add_field", "remove_field", "rename_field")
SORT_VERBS = ("asc", "desc")

_JSON_VALUES = frozenset({"default", "value"})
_BOOLEANS = {"true": True, "false": False}


def _value(name: str, text: str) -> Any:
    if name in _JSON_VALUES:
        try:
            return json.loads(text)
        except ValueError:
            return text
    if text.lower() in _BOOLEANS and name in ("required", "allow_live_partition_source"):
        return _BOOLEANS[text.lower()]
    return text


def apply_change(builder: Any, verbs: tuple[str, ...], text: str) -> None:
    """Call the builder method a line of text names, with its arguments.

    Raises:
        ValidationError: the verb is not one of ``verbs``, the arguments do not fit it, or
            the change itself breaks a rule.
    """
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise ValidationError(f"Cannot read change {text!r}: {e}.") from e
    if not words:
        raise ValidationError("An empty change was given.")
    verb, rest = words[0], words[1:]
    if verb not in verbs:
        raise ValidationError(f"Unknown change {verb!r}; use one of: {', '.join(verbs)}.")
    method: Callable[..., Any] = getattr(builder, verb)
    signature = inspect.signature(method)
    params: Mapping[str, inspect.Parameter] = signature.parameters
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for word in rest:
        key, eq, value = word.partition("=")
        if eq and key in params:
            kwargs[key] = _value(key, value)
        elif word in params and params[word].annotation in ("bool", "bool | None"):
            kwargs[word] = True
        else:
            positional = [p for p in params.values() if p.kind is not p.KEYWORD_ONLY]
            name = positional[len(args)].name if len(args) < len(positional) else ""
            args.append(_value(name, word))
    try:
        signature.bind(*args, **kwargs)
    except TypeError as e:
        usage = " ".join(p.name if p.default is p.empty else f"[{p.name}]" for p in params.values())
        raise ValidationError(f"Cannot read change {text!r} ({e}); usage: {verb} {usage}.") from e
    method(*args, **kwargs)


def apply_schema_change(update: UpdateSchema, text: str) -> None:
    """One schema change line (see the module docstring)."""
    apply_change(update, SCHEMA_VERBS, text)


def apply_spec_change(update: UpdateSpec, text: str) -> None:
    """One partition spec change line."""
    apply_change(update, SPEC_VERBS, text)


def apply_sort_change(update: UpdateSortOrder, text: str) -> None:
    """One sort field line: ``asc COLUMN [TRANSFORM] [nulls-first|nulls-last]`` or ``desc``."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise ValidationError(f"Cannot read change {text!r}: {e}.") from e
    words = [f"null_order={w}" if w.lower().startswith("nulls") else w for w in words]
    apply_change(update, SORT_VERBS, shlex.join(words))


__all__ = [
    "SCHEMA_VERBS",
    "SORT_VERBS",
    "SPEC_VERBS",
    "apply_change",
    "apply_schema_change",
    "apply_sort_change",
    "apply_spec_change",
]


def stage_layout_changes(
    transaction: Transaction, spec_changes: Sequence[str], sort_changes: Sequence[str]
) -> None:
    """Stage partition spec lines, then sort order lines (``unsorted`` clears the order).

    What ``icecore evolve`` commits and what ``icecore whatif`` estimates, read alike.
    """
    if spec_changes:
        spec = transaction.update_spec()
        for text in spec_changes:
            apply_spec_change(spec, text)
        spec.commit()
    if sort_changes:
        order = transaction.update_sort_order()
        for text in sort_changes:
            if text.strip().lower() != "unsorted":
                apply_sort_change(order, text)
        order.commit()

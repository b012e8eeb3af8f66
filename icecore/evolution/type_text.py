"""Column types as a user types them.

For example ``long``, ``decimal(12,2)``, ``list<string>``, ``map<string, int>``,
``struct<lat: double, lon: double>``.

Primitive names are the spec's (Appendix C, via :func:`icecore.types.primitive_from_string`);
nested types use the angle-bracket form Spark prints. Nested fields, list elements and map
values are optional. Field ids are placeholders (0): a schema update assigns fresh ids above
``last-column-id`` when the column is added ("Schema Evolution"). Every parsed type goes
through :func:`icecore.types.check_type`, so ``decimal(5,9)`` is refused here, before any
schema holds it.
"""

from __future__ import annotations

from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.types import (
    MAX_NESTING,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    check_type,
    primitive_from_string,
)


def parse_type(text: str, column: str | None = None) -> IcebergType:
    """Parse a type string (see the module docstring) and check its parameters.

    Args:
        text: the type as typed.
        column: the column it is for, named in a refusal.

    Raises:
        ValidationError: the text is not a type, or its parameters break the spec.
    """
    parser = _Parser(text)
    result = parser.type()
    parser.skip_space()
    if parser.pos != len(text):
        raise ValidationError(
            f"Cannot read type {text!r}: unexpected {text[parser.pos :]!r} at position "
            f"{parser.pos}."
        )
    check_type(result, column)
    return result


class _Parser:
    """A recursive-descent reader over one type string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _error(self, expected: str) -> ValidationError:
        return ValidationError(
            f"Cannot read type {self.text!r}: expected {expected} at position {self.pos}."
        )

    def expect(self, char: str) -> None:
        self.skip_space()
        if not self.text.startswith(char, self.pos):
            raise self._error(repr(char))
        self.pos += 1

    def word(self) -> str:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (
            self.text[self.pos].isalnum() or self.text[self.pos] in "_"
        ):
            self.pos += 1
        if start == self.pos:
            raise self._error("a name")
        return self.text[start : self.pos]

    def type(self, depth: int = 0) -> IcebergType:
        """The type at the current position; ``depth`` nested types enclose it.

        A type nested deeper than :data:`MAX_NESTING` is refused before recursing further.
        """
        name = self.word().lower()
        if name in ("list", "map", "struct") and depth >= MAX_NESTING:
            raise ValidationError(
                f"Cannot read type {self.text[:80]!r}: structs, lists and maps are nested "
                f"more than {MAX_NESTING} levels deep."
            )
        if name == "list":
            self.expect("<")
            element = self.type(depth + 1)
            self.expect(">")
            return ListType(0, element, element_required=False)
        if name == "map":
            self.expect("<")
            key = self.type(depth + 1)
            self.expect(",")
            value = self.type(depth + 1)
            self.expect(">")
            return MapType(0, key, 0, value, value_required=False)
        if name == "struct":
            self.expect("<")
            fields: list[NestedField] = []
            self.skip_space()
            while not self.text.startswith(">", self.pos):
                if fields:
                    self.expect(",")
                field_name = self.word()
                self.expect(":")
                fields.append(NestedField(0, field_name, self.type(depth + 1), required=False))
                self.skip_space()
            self.expect(">")
            return StructType(tuple(fields))
        return self._primitive(name)

    def _primitive(self, name: str) -> IcebergType:
        self.skip_space()
        text = name
        if name in ("decimal", "fixed", "geometry", "geography") and self.pos < len(self.text):
            closing = {"(": ")", "[": "]"}.get(self.text[self.pos])
            if closing is not None:
                end = self.text.find(closing, self.pos)
                if end < 0:
                    raise self._error(repr(closing))
                params = self.text[self.pos + 1 : end]
                # The spec's table writes fixed(L), its JSON fixed[L]: accept both.
                bracket = "[]" if name == "fixed" else self.text[self.pos] + closing
                text = f"{name}{bracket[0]}{params}{bracket[1]}"
                self.pos = end + 1
        try:
            return primitive_from_string(text, check_precision=False)
        except (Unsupported, InvalidMetadata) as e:
            raise ValidationError(
                f"Unknown type {text!r}: use boolean, int, long, float, double, decimal(P,S), "
                "date, time, timestamp, timestamptz, string, uuid, fixed(L), binary, or "
                "list<...>, map<...,...>, struct<name: type, ...>."
            ) from e


__all__ = ["parse_type"]

r"""SQL ``LIKE`` patterns as Spark SQL reads them: one reading for the parser and evaluators.

Spark's ``StringUtils.escapeLikeRegex``: ``_`` matches any one character, ``%`` any run of
characters (line breaks included: the regex is DOTALL), and the escape character (``\`` by
default, or the ``ESCAPE`` one) makes the next ``_``, ``%`` or itself literal; before any
other character, or at the end of the pattern, it is an error. Matching is case-sensitive
and on whole values. A character is a code point in Python and in RE2 (Arrow's regex
engine), as Java's regex ``.`` matches a whole supplementary character.

Spark's optimizer (``LikeSimplification``) rewrites a pattern without its escape character
into a comparison when it has one of a few shapes, and pushes to Iceberg only what those
comparisons convert to: :func:`spark_shape` says which, so planning prunes by what Spark
pushes and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

DEFAULT_ESCAPE = "\\"
"""Spark's escape character when no ``ESCAPE`` clause is given."""


class Wildcard(Enum):
    """The two LIKE wildcards."""

    ONE = "_"
    ANY = "%"


Token = str | Wildcard
"""A literal character or a wildcard."""


class LikePatternError(ValueError):
    """A pattern Spark refuses; the message says why, as a sentence fragment."""


def like_tokens(pattern: str, escape: str = DEFAULT_ESCAPE) -> list[Token]:
    """The pattern as literal characters and wildcards, escapes resolved (Spark's rules).

    Raises:
        LikePatternError: the escape character precedes another character or ends the
            pattern, which Spark refuses (``INVALID_FORMAT.ESC_IN_THE_MIDDLE`` / ``_AT_THE_END``).
    """
    tokens: list[Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape:
            if i + 1 >= len(pattern):
                raise LikePatternError(f"ends with its escape character {escape!r}")
            following = pattern[i + 1]
            if following not in ("_", "%", escape):
                raise LikePatternError(
                    f"puts its escape character {escape!r} before {following!r}; it may only "
                    f"precede _, % or itself"
                )
            tokens.append(following)
            i += 2
            continue
        tokens.append(Wildcard.ONE if c == "_" else Wildcard.ANY if c == "%" else c)
        i += 1
    return tokens


@dataclass(frozen=True, slots=True)
class Shape:
    """What a pattern means without regexes, when it can be said so exactly.

    ``literal`` is the whole value (``exact``) or its prefix (``prefix``); other patterns
    need the regex.
    """

    kind: str
    literal: str


def exact_shape(tokens: list[Token]) -> Shape | None:
    """``'abc'`` is ``= 'abc'``, ``'abc%'`` (or ``'abc%%'``) starts with ``abc``; else None."""
    body = list(tokens)
    trailing = 0
    while body and body[-1] is Wildcard.ANY:
        body.pop()
        trailing += 1
    if any(isinstance(t, Wildcard) for t in body):
        return None
    text = "".join(t for t in body if isinstance(t, str))
    return Shape("prefix" if trailing else "exact", text)


_SPARK_STARTS = re.compile(r"([^_%]+)%", re.DOTALL)
_SPARK_STARTS_ENDS = re.compile(r"([^_%]+)%([^_%]+)", re.DOTALL)
_SPARK_EQUAL = re.compile(r"[^_%]*", re.DOTALL)


def spark_shape(pattern: str, escape: str = DEFAULT_ESCAPE) -> Shape | None:
    """What Spark pushes to Iceberg for ``LIKE pattern`` (besides the inferred IS NOT NULL).

    Spark 3.5's ``LikeSimplification`` leaves a pattern holding the escape character alone
    (nothing is pushed); otherwise ``'abc'`` becomes ``= 'abc'`` (``exact``), ``'abc%'``
    ``StartsWith`` (``prefix``) and ``'abc%xyz'`` a length check AND ``StartsWith`` AND
    ``EndsWith``, of which Iceberg takes the ``StartsWith`` (``prefix`` within ``and``);
    ``EndsWith``/``Contains`` and other patterns push nothing (None).
    """
    if escape in pattern:
        return None
    if _SPARK_EQUAL.fullmatch(pattern):
        return Shape("exact", pattern)
    found = _SPARK_STARTS.fullmatch(pattern)
    if found:
        return Shape("prefix", found.group(1))
    found = _SPARK_STARTS_ENDS.fullmatch(pattern)
    if found:
        return Shape("prefix_and", found.group(1))
    return None


def like_regex(tokens: list[Token], *, re2: bool) -> str:
    r"""An anchored, DOTALL regex matching whole values; ``re2`` for Arrow, else Python's ``re``.

    Literal characters that are not ASCII letters or digits are written as code point
    escapes (``\x{..}`` in RE2, ``\U........`` in Python), so no character of the data
    can change the regex.
    """
    parts = ["(?s)", "^" if re2 else ""]
    for t in tokens:
        if t is Wildcard.ONE:
            parts.append(".")
        elif t is Wildcard.ANY:
            parts.append(".*")
        elif isinstance(t, str) and t.isascii() and t.isalnum():
            parts.append(t)
        elif isinstance(t, str):
            parts.append(f"\\x{{{ord(t):x}}}" if re2 else f"\\U{ord(t):08x}")
    if re2:
        parts.append("\\z")
    return "".join(parts)


def python_matcher(pattern: str, escape: str) -> Callable[[str], bool]:
    """Whether a whole value matches the pattern, in time linear in the pattern times the value.

    One regex of the whole pattern would be ``.*a.*a...`` for ``%a%a...``, which Python's
    backtracking ``re`` takes exponential time on (measured: ``%%%%%%%%a`` against 100
    characters did not end in 100 s). The pattern is split at its ``%`` runs instead: the
    first piece must match at the start, the last at the end, and each piece between at its
    leftmost place after the one before (``%`` takes any run, so the leftmost place never
    loses a match). A piece is literal characters and ``_`` only, a regex of fixed length.
    """
    pieces: list[list[Token]] = [[]]
    for t in like_tokens(pattern, escape):
        if t is Wildcard.ANY:
            pieces.append([])
        else:
            pieces[-1].append(t)
    compiled = [(re.compile(like_regex(p, re2=False)), len(p)) for p in pieces]
    if len(compiled) == 1:
        whole = compiled[0][0]
        return lambda value: whole.fullmatch(value) is not None
    (first, first_len), *middle, (last, last_len) = compiled
    middle = [(regex, n) for regex, n in middle if n]

    def matches(value: str) -> bool:
        end = len(value) - last_len  # where the last piece starts
        if end < first_len or first.match(value, 0, first_len) is None:
            return False
        at = first_len
        for regex, _ in middle:
            found = regex.search(value, at, end)
            if found is None:
                return False
            at = found.end()
        return last.fullmatch(value, end) is not None

    return matches


__all__ = [
    "DEFAULT_ESCAPE",
    "LikePatternError",
    "Shape",
    "Wildcard",
    "exact_shape",
    "like_regex",
    "like_tokens",
    "python_matcher",
    "spark_shape",
]

"""Page view helpers that bound what a user's input can make a page draw."""

from __future__ import annotations

from ui.views import MAX_TEXT, clip


def test_clip_keeps_short_text_and_says_what_it_cut() -> None:
    assert clip("a = 1") == "a = 1"
    exact = "x" * MAX_TEXT
    assert clip(exact) == exact
    long = " OR ".join(f"id = {i}" for i in range(10_000))
    shown = clip(long)
    assert shown.startswith(long[:MAX_TEXT])
    assert shown.endswith(f"({len(long) - MAX_TEXT:,} more characters)")
    assert len(shown) < MAX_TEXT + 40

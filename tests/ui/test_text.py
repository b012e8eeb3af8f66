"""Whatever a link or a user supplied is shown as text: never a link, an image, HTML or an icon.

The escape is checked by rendering it with a CommonMark renderer (markdown-it, HTML on) over a
hostile corpus: the rendered page must hold the text exactly, and no element but the paragraph.
Streamlit's own extensions (GFM autolinks, ``:red[...]`` directives, ``:material/...:`` icons,
``$math$``) are not in that renderer; for them the escaped text must not contain the raw
sequence that triggers them (tests/ui/test_browser_text.py checks the real page in chromium).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.ui.helpers import as_shown, open_app, tiny_warehouse
from ui import app
from ui.shell import escape_markdown

PHISHING = "[Session expired - sign in](https://evil.example)"
HOSTILE = [
    PHISHING,
    "https://evil.example/login",
    "www.evil.example",
    "mail admin@evil.example now",
    "<https://evil.example>",
    "![x](https://evil.example/pixel.png)",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<a href='https://evil.example'>click</a>",
    "[ref]: https://evil.example",
    "**bold** _it_ `code` ~~strike~~",
    "# heading",
    "> quote",
    "- item",
    "1. item",
    ":red[alarm] :material/warning: :rainbow-background[x]",
    "$x^2$ and $$y$$",
    "&lt;b&gt; &amp; &#60;",
    "a\\b\\\\c \\[",
    "| a | b |",
    "ordinary text, 42.5 (ok)!",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_as_exactly_that_text(text: str) -> None:
    rendered = MarkdownIt("commonmark", {"html": True}).render(escape_markdown(text)).strip()
    assert rendered.startswith("<p>") and rendered.endswith("</p>"), rendered
    inner = rendered.removeprefix("<p>").removesuffix("</p>")
    assert "<" not in inner, rendered  # no element at all inside the paragraph
    assert html.unescape(inner).replace("\u2060", "") == text  # a word joiner shows nothing


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_has_no_trigger_of_streamlits_extensions(text: str) -> None:
    escaped = escape_markdown(text)
    unescaped = re.compile(r"(?<!\\)")
    # GFM finds autolink literals in the parsed text, where escapes are already resolved.
    for trigger in ("://", "www.", "@evil"):
        assert trigger not in re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", escaped)
    for char in "$:[<@":  # directives, icons, math, tags: found by the parser
        assert not re.search(unescaped.pattern + re.escape(char), escaped), (char, escaped)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("ref", PHISHING),
        ("ref", "https://evil.example"),
        ("as_of", PHISHING),
        ("snapshot", "<b>1</b>"),
        ("table", "db.[x](https://evil.example)"),
        ("catalog", PHISHING),
    ],
)
def test_a_link_value_in_an_error_shows_as_text(
    param: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = tiny_warehouse(tmp_path / "served")
    monkeypatch.setenv("ICECORE_CATALOG", str(served))
    monkeypatch.setenv("ICECORE_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("ICECORE_OPEN_CATALOGS", raising=False)
    params = {"catalog": str(served), "table": "db.zones", param: value}
    at = open_app(app.OVERVIEW.file, **params)
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    body = at.error[0].value
    assert "](" not in body and "://" not in body
    if param != "catalog":  # a catalog not served is not quoted back at all
        assert value in as_shown(body)

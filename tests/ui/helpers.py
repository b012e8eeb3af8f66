"""Helpers for the app's AppTest and browser tests (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from ui.app import MAIN_SCRIPT

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 180

OpenPage = Callable[..., AppTest]


def open_app(page: str | None = None, **params: str) -> AppTest:
    """Run the main script, then ``page`` (a :class:`ui.app.Page` file), ``params`` as the query.

    The main script is the one inside the package, as ``icecore app`` runs it (the repository's
    ``app.py`` is a link to it).
    """
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    return at


def metrics(at: AppTest) -> dict[str, str]:
    """The page's metrics by label, each as a person reads it.

    The value, then its grey delta line when it has one (a part of a whole: ``2,821`` over
    ``of 2,831``).
    """
    return {m.label: " ".join(t for t in (m.value, m.proto.delta) if t) for m in at.metric}


def number(text: str) -> int:
    """``2,395`` -> 2395; ``160 of 558`` -> 160."""
    return int(text.split(" of ")[0].replace(",", ""))


def figures(at: AppTest) -> list[dict[str, Any]]:
    """The plotly figures on the page, as the JSON the browser receives."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def no_problems(at: AppTest) -> None:
    """No exception and no error box on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def texts(at: AppTest) -> str:
    """Every text the page shows (markdown, captions, alerts, progress bars), one a line."""
    found = [m.value for m in at.markdown] + [c.value for c in at.caption]
    found += [a.value for a in (*at.info, *at.warning, *at.error, *at.success)]
    found += [p.proto.text for p in at.get("progress")]
    return "\n".join(found)


def rerun_until(
    at: AppTest, ready: Callable[[AppTest], bool], what: str, timeout_s: float = 300
) -> None:
    """Rerun the page (as its polling fragment does) until ``ready(at)``; fail after a while."""
    deadline = time.monotonic() + timeout_s
    while not ready(at):
        assert time.monotonic() < deadline, f"{what}: {texts(at)}"
        time.sleep(0.5)
        at.run()


def spark_count(spark: Any, sql: str) -> int:
    """The one number a Spark query returns."""
    return int(spark.sql(sql).collect()[0][0] or 0)


Step = tuple[str, str, Any]
"""One widget action by key: ``("text_input", key, text)``, ``("selectbox", key, value)``,
``("checkbox", key, True)``, ``("button", key, None)``..."""


def drive(at: AppTest, *steps: Step) -> AppTest:
    """Apply each step and rerun the page after it, as a user's input does."""
    for kind, key, value in steps:
        widget = getattr(at, kind)(key=key)
        if kind == "text_input":
            widget.input(value)
        elif kind == "checkbox":
            widget.set_value(bool(value))
        elif kind == "button":
            widget.click()
        else:
            widget.set_value(value)
        at.run()
    return at


def code_blocks(at: AppTest) -> list[str]:
    """The page's code blocks (dry-run lines, staged changes, the JSON diff)."""
    return [c.value for c in at.main.code]


def keys(widgets: Any) -> set[str]:
    """The keys of the widgets drawn (``keys(at.button)``)."""
    return {w.key for w in widgets if w.key}


EMPTY_TABLE = REPO / "tests/data/metadata/spark/zones-00000.metadata.json"
"""A Spark-written metadata file of an empty table (no snapshot: nothing else to copy)."""


def tiny_warehouse(root: Path, name: str = "db.zones") -> Path:
    """A filesystem warehouse at ``root`` holding one empty table ``name`` (Hadoop layout)."""
    namespace, table = name.split(".")
    folder = root / namespace / table
    metadata = json.loads(EMPTY_TABLE.read_text())
    metadata["location"] = str(folder)
    path = folder / "metadata" / "v1.metadata.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metadata))
    (folder / "metadata" / "version-hint.text").write_text("1")
    return root


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def as_shown(markdown: str) -> str:
    """The text a markdown element without markup shows: its backslash escapes resolved.

    CommonMark: a backslash before an ASCII punctuation character shows that character; a
    word joiner (U+2060) shows nothing.
    """
    return _ESCAPE.sub(r"\1", markdown).replace("\u2060", "")

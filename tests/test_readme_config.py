"""Every environment switch the code reads is in README's Configuration table, with its default.

``ICECORE_PORT`` was once documented nowhere but a comment in scripts/serve.sh. This reads the
code (the core, the app, the pipeline, the scripts, the Dockerfile and the Makefile) for every
``ICECORE_...`` name and the README for the rows of its Configuration table.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = ["icecore", "ui", "pipeline", "scripts"]  # ui/app holds Tables.py and the pages
FILES = ["Dockerfile", "Makefile"]
NAME = re.compile(r"\bICECORE_[A-Z0-9_]*[A-Z0-9]\b")


def _code_names() -> set[str]:
    names: set[str] = set()
    paths = [REPO / f for f in FILES]
    for folder in CODE:
        paths += [p for p in (REPO / folder).rglob("*") if p.suffix in (".py", ".sh", ".toml")]
    for path in paths:
        names |= set(NAME.findall(path.read_text(encoding="utf-8")))
    return names


def _configuration_rows() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_code_reads_the_switches_this_test_knows_of() -> None:
    names = _code_names()
    # The scan finds what it is meant to (a broken pattern would find nothing and pass).
    assert {"ICECORE_PORT", "ICECORE_CATALOG", "ICECORE_SQL_TIMEOUT_S"} <= names


def test_every_switch_is_in_the_configuration_table_with_its_default() -> None:
    rows = _configuration_rows()
    missing, without_default = [], []
    for name in sorted(_code_names()):
        row = next((r for r in rows if f"`{name}" in r.split(" | ")[0]), None)
        if row is None:
            missing.append(name)
        elif "default" not in row:
            without_default.append(name)
    assert not missing, f"not in README's Configuration table: {missing}"
    assert not without_default, f"no default given in README: {without_default}"

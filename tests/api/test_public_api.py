"""The public API on purpose: what ``icecore`` exports, and a committed listing of it.

tests/api/public_api.txt holds ``icecore.__all__`` and the public members (with signatures)
of ``Table``, the ``Catalog`` protocol, ``TableScan``, ``Plan`` and ``MetadataTables``; the
listing is regenerated here and compared, so a change to the API is a visible diff that
review accepts by rewriting the file (``python -m tests.api.snapshot --write``).
"""

from __future__ import annotations

import difflib
import inspect
import subprocess
import sys
import tomllib

from packaging.version import Version

import icecore
import icecore.errors
from tests.api.snapshot import SNAPSHOT, WRITE_COMMAND, listing
from tests.conftest import REPO


def test_the_public_api_matches_the_committed_listing() -> None:
    committed = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
    now = listing()
    if now != committed:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                now.splitlines(keepends=True),
                fromfile=f"{SNAPSHOT.name} (committed)",
                tofile=f"{SNAPSHOT.name} (the code now)",
            )
        )
        raise AssertionError(
            f"The public API changed. If that is deliberate, run `{WRITE_COMMAND}` and commit "
            f"the file; the change:\n{diff}"
        )


def test_every_error_class_is_exported() -> None:
    errors = {
        name
        for name, value in vars(icecore.errors).items()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == icecore.errors.__name__
    }
    assert "IcecoreError" in errors
    assert errors <= set(icecore.__all__)
    for name in errors:
        assert getattr(icecore, name) is getattr(icecore.errors, name)


def test_every_exported_name_resolves_and_every_class_says_what_it_is() -> None:
    for name in icecore.__all__:
        value = getattr(icecore, name)
        if inspect.isclass(value):
            assert (vars(value).get("__doc__") or "").strip(), f"{name} has no docstring"


def test_what_a_notebook_needs_is_exported() -> None:
    t = icecore.load_table(str(REPO / "tests/data/metadata/spark/trips-00024.metadata.json"))
    assert isinstance(t, icecore.Table)
    assert isinstance(t.identifier, icecore.TableIdentifier)
    assert isinstance(t.io, icecore.FileIO)
    assert isinstance(t.scan(), icecore.TableScan)
    assert isinstance(t.inspect, icecore.MetadataTables)
    snapshot = t.snapshot()
    assert isinstance(snapshot, icecore.Snapshot)
    assert isinstance(t.resolve().schema, icecore.Schema)
    assert t.resolve(icecore.At(ref="main")).snapshot == snapshot


def test_version_is_the_distributions_and_costs_no_import_time() -> None:
    # The wheel's metadata takes its version from the constant icecore re-exports (the wheel
    # test checks `icecore --version` against the built wheel's name).
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"] == (
        "icecore.version.__version__"
    )
    assert str(Version(icecore.__version__)) == icecore.__version__
    probe = "import icecore, sys; print('importlib.metadata' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"

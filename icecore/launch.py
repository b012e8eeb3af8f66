"""``icecore app``: serve the explorer from wherever the package is installed.

The explorer is Streamlit scripts shipped inside the ``ui`` package (``ui/app/Tables.py`` and
its ``pages/``, see :mod:`ui.app`); this module finds them by location, without importing
``ui`` or Streamlit (the core imports neither: the import-linter contract), and replaces the
process with ``python -m streamlit run`` on them. Streamlit reads the settings the app needs
(headless, XSRF protection, no usage statistics, no file watching, the theme) from the
``.streamlit/config.toml`` shipped beside the main script, a script-level config that wins
over any in the working folder, so an installed app serves as ``make run`` does.

It builds no demo warehouse (``make demo`` or ``python -m pipeline.demo`` does, with the
``[spark]`` extra): with no catalog named it serves ``./warehouse`` if there is one.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from icecore.errors import IcecoreError

CATALOG_ENV = "ICECORE_CATALOG"
"""The catalog the app opens first (the app reads it: ``ui.served.default_catalog``)."""

DEFAULT_WAREHOUSE = "warehouse"
"""The folder served when no catalog is named, as ``make run`` serves it."""

DEFAULT_PORT = 8501
DEFAULT_ADDRESS = "127.0.0.1"


class AppUnavailable(IcecoreError):
    """The explorer cannot start here: no catalog was named, or its scripts are missing."""


class MissingExtra(IcecoreError):
    """A command needs packages of an extra (``pip install "icecore[EXTRA]"``) not installed."""


def require_extra(extra: str, what: str, *modules: str) -> None:
    """Say in one sentence which extra to install when any of ``modules`` is not importable.

    ``find_spec`` looks without importing, so the check costs nothing when all are there.
    """
    if any(importlib.util.find_spec(module) is None for module in modules):
        raise MissingExtra(
            f"{what} needs the {extra} extra, which is not installed: "
            f'pip install "icecore[{extra}]".'
        )


@dataclass(frozen=True)
class AppCommand:
    """The process ``icecore app`` becomes: its arguments and environment."""

    argv: list[str]
    env: dict[str, str]
    url: str


def main_script() -> Path:
    """The installed explorer's main script, found where the ``ui`` package lies.

    ``find_spec`` of a top-level package locates it without running its ``__init__``.
    """
    spec = importlib.util.find_spec("ui")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        script = Path(folder) / "app" / "Tables.py"
        if script.is_file():
            return script
    raise AppUnavailable(
        "The explorer's pages are not installed with this Icecore: reinstall the package."
    )


def app_command(
    catalog: str | None = None,
    port: int = DEFAULT_PORT,
    address: str = DEFAULT_ADDRESS,
    environ: dict[str, str] | None = None,
) -> AppCommand:
    """The Streamlit command serving the explorer on ``catalog``, or why it cannot run.

    The catalog is ``catalog``, else ``ICECORE_CATALOG``, else ``./warehouse`` when that
    folder exists (as an absolute path, so the app and its links need no working folder).
    """
    env = dict(os.environ if environ is None else environ)
    if not 0 < port < 65536:
        raise AppUnavailable(f"--port {port} is not a TCP port (1 to 65535).")
    require_extra("app", "The explorer", "streamlit", "plotly")
    if catalog:
        env[CATALOG_ENV] = catalog
    elif not env.get(CATALOG_ENV):
        if not Path(DEFAULT_WAREHOUSE).is_dir():
            raise AppUnavailable(
                f"No catalog to serve: pass --catalog (a warehouse folder, sqlite:///file.db, "
                f"an http(s) REST URI or a configured name) or set {CATALOG_ENV}; there is no "
                f"./{DEFAULT_WAREHOUSE} here, and icecore app builds no demo warehouse."
            )
        env[CATALOG_ENV] = str(Path(DEFAULT_WAREHOUSE).resolve())
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(main_script()),
        "--server.address",
        address,
        "--server.port",
        str(port),
    ]
    return AppCommand(argv=argv, env=env, url=f"http://{address}:{port}")


def serve_app(command: AppCommand) -> NoReturn:
    """Become the Streamlit server: Ctrl-C and a kill reach it directly."""
    print(f"Serving Icecore at {command.url}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command.argv[0], command.argv, command.env)

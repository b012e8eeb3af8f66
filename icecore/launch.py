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

With ``[auth]`` in icecore.toml (DESIGN.md "Identity, roles and audit") the app signs people
in with OpenID Connect through Streamlit's own ``st.login``, which reads its provider from
an ``[auth]`` section of Streamlit's secrets. That section is generated here at every start
from icecore.toml and the environment (:func:`streamlit_auth_secrets`), written to a 0600
file in a private temporary folder and passed with ``--secrets.files``, so no one writes a
``.streamlit/secrets.toml`` by hand and no secret is ever in a file of the repository.
``scripts/serve.sh`` gets the same file from ``python -m icecore.launch``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from icecore.access import AuthConfig
from icecore.config import CONFIG_ENV, load_config
from icecore.errors import IcecoreError

CATALOG_ENV = "ICECORE_CATALOG"
"""The catalog the app opens first (the app reads it: ``ui.served.default_catalog``)."""

DEFAULT_WAREHOUSE = "warehouse"
"""The folder served when no catalog is named, as ``make run`` serves it."""

DEFAULT_PORT = 8501
DEFAULT_ADDRESS = "127.0.0.1"

DEFAULT_SCOPE = "openid profile email"
"""What the app asks the provider for: the ID token and the claims that name the person.
``[auth] scope`` replaces it where a provider puts the groups claim behind another scope."""
CALLBACK_PATH = "/oauth2callback"
"""Where Streamlit receives the provider's answer (the redirect URI registered there)."""


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
    auth = _auth_of(env)
    if auth is not None:
        require_extra("app", "Signing in ([auth] in icecore.toml)", "authlib", "httpx")
        argv += ["--secrets.files", str(write_auth_secrets(auth, address, port, env))]
    return AppCommand(argv=argv, env=env, url=f"http://{address}:{port}")


def _auth_of(env: dict[str, str]) -> AuthConfig | None:
    """The ``[auth]`` section of the icecore.toml ``env`` names (``ICECORE_CONFIG``), if any."""
    path = env.get(CONFIG_ENV)
    return load_config(Path(path) if path else None).auth


def redirect_uri(auth: AuthConfig, address: str, port: int) -> str:
    """``[auth] redirect_uri``, else this server's callback on ``address:port``.

    A server listening on every interface (``0.0.0.0``, ``::``) has no address a browser
    reaches it by: the derived URI names 127.0.0.1, and a deployment sets ``redirect_uri``
    to its public address (README "Deploying").
    """
    configured = auth.extra.get("redirect_uri", "").strip()
    if configured:
        return configured
    host = "127.0.0.1" if address in ("0.0.0.0", "::", "") else address
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}{CALLBACK_PATH}"


def streamlit_auth_secrets(
    auth: AuthConfig, address: str, port: int, environ: dict[str, str]
) -> dict[str, object]:
    """Streamlit's ``[auth]`` secrets section for ``auth`` (``st.login``'s one provider).

    The client secret comes from the environment variable ``client_secret_env`` names, the
    cookie secret from ``[auth] cookie_secret_env``'s (else a random one per start: a restart
    then signs everyone out). The authorization request uses PKCE with S256
    (``code_challenge_method``, which Authlib turns into a ``code_challenge`` per request).

    Raises:
        AppUnavailable: a named environment variable is not set (the sentence names the
            variable, never a value).
    """
    client_secret = environ.get(auth.client_secret_env, "")
    if not client_secret:
        raise AppUnavailable(
            f"[auth] needs the OpenID Connect client secret in the environment variable "
            f"{auth.client_secret_env}, which is not set."
        )
    cookie_env = auth.extra.get("cookie_secret_env", "").strip()
    cookie_secret = environ.get(cookie_env, "") if cookie_env else secrets.token_urlsafe(32)
    if not cookie_secret:
        raise AppUnavailable(
            f"[auth] cookie_secret_env names the environment variable {cookie_env}, which is "
            "not set."
        )
    return {
        "redirect_uri": redirect_uri(auth, address, port),
        "cookie_secret": cookie_secret,
        "client_id": auth.client_id,
        "client_secret": client_secret,
        "server_metadata_url": auth.discovery_url,
        "client_kwargs": {
            "scope": auth.extra.get("scope", "").strip() or DEFAULT_SCOPE,
            "code_challenge_method": "S256",
        },
    }


def _toml(section: dict[str, object]) -> str:
    """``section`` as TOML (strings and one level of inline tables; JSON strings are TOML's)."""
    lines = ["[auth]"]
    for key, value in section.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(str(v))}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(str(value))}")
    return "\n".join(lines) + "\n"


def write_auth_secrets(auth: AuthConfig, address: str, port: int, environ: dict[str, str]) -> Path:
    """Write Streamlit's auth secrets to a new private file; its path.

    The folder is made by :func:`tempfile.mkdtemp` (mode 0700, a fresh name) and the file is
    created exclusively with mode 0600: no other user of the machine can read it. It lives as
    long as the server (Streamlit reads it when a visitor signs in); the operating system's
    temporary folder cleaning removes it after.
    """
    text = _toml(streamlit_auth_secrets(auth, address, port, environ))
    folder = Path(tempfile.mkdtemp(prefix="icecore-auth-"))
    path = folder / "secrets.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return path


def serve_app(command: AppCommand) -> NoReturn:
    """Become the Streamlit server: Ctrl-C and a kill reach it directly."""
    print(f"Serving Icecore at {command.url}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command.argv[0], command.argv, command.env)


def main(argv: list[str] | None = None) -> int:
    """``python -m icecore.launch --address A --port P``: what ``scripts/serve.sh`` passes on.

    Prints ``--secrets.files`` and the generated file's path, one a line, when icecore.toml
    has ``[auth]``, and nothing otherwise; a missing secret is one sentence and exit 1.
    """
    parser = argparse.ArgumentParser(prog="python -m icecore.launch")
    parser.add_argument("--address", default=DEFAULT_ADDRESS)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    env = dict(os.environ)
    try:
        auth = _auth_of(env)
        if auth is not None:
            path = write_auth_secrets(auth, args.address, args.port, env)
            print(f"--secrets.files\n{path}")
    except IcecoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Start the test OpenID Connect provider on 127.0.0.1 and talk to it as a test would.

:func:`start_provider` runs ``python -m tests.oidc_provider.serve`` (django-oauth-toolkit,
a real provider: discovery, JWKS, authorization code with PKCE S256, userinfo, Django's login
form) with a fresh SQLite file, a fresh RSA key and fresh client secrets, waits until its
discovery document answers, and yields an :class:`OidcProvider`. The users and clients are
fixed here so that tests can name them:

- users ``ana`` (group ``analysts``), ``owen`` (``sales-owners``), ``vic`` (``viewers``);
- clients ``icecore`` (the app's confidential client; audience ``icecore``) and ``other``
  (another audience); both authorization code with PKCE S256 required, RS256 ID tokens,
  and the resource-owner password grant so tests get tokens without a browser.

This module runs in the pytest process: standard library and ``cryptography`` only.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 60.0
"""How long the provider may take to answer its discovery document (it takes ~1-2 s)."""


@dataclass(frozen=True)
class TestUser:
    """One user of the test provider."""

    username: str
    password: str
    group: str
    first_name: str
    last_name: str

    @property
    def email(self) -> str:
        return f"{self.username}@example.test"

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}"


USERS: Mapping[str, TestUser] = {
    "ana": TestUser("ana", "ana-pass-7Qx", "analysts", "Ana", "Lytic"),
    "owen": TestUser("owen", "owen-pass-3Kd", "sales-owners", "Owen", "Sales"),
    "vic": TestUser("vic", "vic-pass-9Wm", "viewers", "Vic", "Viewer"),
}
"""The users the provider has, by user name."""

CLIENTS: Mapping[str, str] = {
    "icecore": "ICECORE_TEST_OIDC_SECRET_ICECORE",
    "other": "ICECORE_TEST_OIDC_SECRET_OTHER",
}
"""The provider's clients, by client id, and the variable their secret is passed in."""


@dataclass(frozen=True)
class OidcProvider:
    """A running test provider.

    Attributes:
        issuer: its issuer URL (``http://127.0.0.1:PORT``), exactly as the discovery
            document's ``issuer`` and the tokens' ``iss`` say it.
        client_id: the app's client (``icecore``), also the audience of its tokens.
        client_secret: that client's secret.
        private_key_pem: the PEM of the RSA key the provider signs ID tokens with.
        kid: that key's id, as the JWKS and the ID tokens' headers carry it.
        client_secrets: every client's secret, by client id (``icecore``, ``other``).
        database: the provider's SQLite file.
        log: where its stderr goes (request lines and errors).
    """

    issuer: str
    client_id: str
    client_secret: str
    private_key_pem: str
    kid: str
    client_secrets: Mapping[str, str]
    database: Path
    log: Path

    @property
    def discovery_url(self) -> str:
        return self.issuer + "/.well-known/openid-configuration"

    def discovery(self) -> dict[str, Any]:
        """The provider's discovery document, fetched now."""
        return _get_json(self.discovery_url)

    def jwks(self) -> dict[str, Any]:
        """The provider's JSON Web Key Set, fetched now."""
        return _get_json(self.discovery()["jwks_uri"])

    @staticmethod
    def password(user: str) -> str:
        """The password of ``user`` (``ana``, ``owen``, ``vic``)."""
        return USERS[user].password

    def tokens(self, user: str, client: str = "icecore") -> dict[str, Any]:
        """Tokens for ``user`` from ``client`` by the password grant (scope openid profile email).

        Returns the token response: ``id_token`` (an RS256 JWT whose ``aud`` is the client
        id and which carries ``groups``), ``access_token`` (opaque; good at userinfo),
        ``refresh_token``, ``expires_in``, ``token_type``, ``scope``.
        """
        body = urllib.parse.urlencode(
            {
                "grant_type": "password",
                "username": user,
                "password": USERS[user].password,
                "scope": "openid profile email",
            }
        ).encode()
        basic = base64.b64encode(f"{client}:{self.client_secrets[client]}".encode()).decode()
        request = urllib.request.Request(
            self.discovery()["token_endpoint"],
            data=body,
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.load(response))

    def redirect_uris(self, client: str = "icecore") -> list[str]:
        """The redirect URIs registered for ``client``."""
        with _connect(self.database) as db:
            row = db.execute(
                "SELECT redirect_uris FROM oauth2_provider_application WHERE client_id = ?",
                (client,),
            ).fetchone()
        return str(row[0]).split()

    def set_redirect_uris(self, uris: list[str], client: str = "icecore") -> None:
        """Register exactly ``uris`` (exact matches, no wildcards) for ``client``."""
        for uri in uris:
            parsed = urllib.parse.urlsplit(uri)
            if (
                parsed.scheme not in ("http", "https")
                or not parsed.netloc
                or any(c.isspace() or c == "*" for c in uri)
            ):
                raise ValueError(f"{uri!r} is not a plain http(s) redirect URI.")
        with _connect(self.database) as db:
            updated = db.execute(
                "UPDATE oauth2_provider_application SET redirect_uris = ?,"
                " post_logout_redirect_uris = ? WHERE client_id = ?",
                (" ".join(uris), " ".join(_origins(uris)), client),
            ).rowcount
        if updated != 1:
            raise KeyError(client)

    def requests_to(self, path: str) -> int:
        """How many requests the provider has logged for ``path`` (e.g. the JWKS) so far."""
        needle = f'"GET {path} '
        return sum(needle in line for line in self.log.read_text().splitlines())

    def add_redirect_uri(self, uri: str, client: str = "icecore") -> None:
        """Register ``uri`` too for ``client`` (the app's port is chosen at run time).

        Its origin (with a trailing ``/``) becomes a post-logout redirect URI as well.
        """
        current = self.redirect_uris(client)
        if uri not in current:
            self.set_redirect_uris([*current, uri], client)


def _origins(uris: list[str]) -> list[str]:
    found: list[str] = []
    for uri in uris:
        parsed = urllib.parse.urlsplit(uri)
        origin = f"{parsed.scheme}://{parsed.netloc}/"
        if origin not in found:
            found.append(origin)
    return found


@contextmanager
def _connect(database: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(database, timeout=20)
    try:
        with db:
            yield db
    finally:
        db.close()


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return dict(json.load(response))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rsa_private_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@contextmanager
def start_provider(root: Path | None = None) -> Iterator[OidcProvider]:
    """Run a fresh provider on 127.0.0.1 for the ``with`` block; stop it afterwards.

    Raises:
        RuntimeError: it exited or did not answer its discovery document within
            :data:`STARTUP_SECONDS` (the message ends with its log).
    """
    folder = root or Path(tempfile.mkdtemp(prefix="icecore-oidc-"))
    port = _free_port()
    issuer = f"http://127.0.0.1:{port}"
    pem = _rsa_private_pem()
    client_secrets = {client: secrets.token_urlsafe(24) for client in CLIENTS}
    database = folder / "provider.sqlite3"
    log = folder / "provider.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
        "ICECORE_TEST_OIDC_DJANGO_SECRET": secrets.token_urlsafe(32),
        "ICECORE_TEST_OIDC_DB": str(database),
        "ICECORE_TEST_OIDC_ISSUER": issuer,
        "ICECORE_TEST_OIDC_RSA_PRIVATE_KEY": pem,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        **{CLIENTS[c]: s for c, s in client_secrets.items()},
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider.serve", str(port)],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        discovery = _wait_for_discovery(issuer, process, log)
        keys = _get_json(discovery["jwks_uri"])["keys"]
        yield OidcProvider(
            issuer=issuer,
            client_id="icecore",
            client_secret=client_secrets["icecore"],
            private_key_pem=pem,
            kid=str(keys[0]["kid"]),
            client_secrets=client_secrets,
            database=database,
            log=log,
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_for_discovery(issuer: str, process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    url = issuer + "/.well-known/openid-configuration"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"The test OIDC provider exited with {process.returncode}:\n{log.read_text()}"
            )
        try:
            return _get_json(url)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)  # polling a condition (the port answering), not a fixed wait
    raise RuntimeError(f"The test OIDC provider did not answer {url}:\n{log.read_text()}")

"""In chromium: people sign in through a real OpenID Connect provider and see what they may.

The app is started as ``icecore app`` starts it (:func:`icecore.launch.app_command`: the
Streamlit auth secrets generated from icecore.toml's ``[auth]``, the client secret from the
environment) over a hand-written warehouse of two tables, with grants: ``analysts`` read
``db.*``, ``sales-owners`` own ``db.*``, and nobody has ``sales.orders``. The provider is
django-oauth-toolkit (tests/oidc_provider), whose login form each user fills in. ``ana``
(reader) sees her name, only ``db.t``, and no commit control on Evolution; ``owen`` (owner)
commits a property there, which the table's metadata then holds (read with icecore from the
warehouse, not from the page). The authorization request the app sends carries a PKCE S256
challenge. (No Activity page exists on main yet: the audit part of issue 31 adds it.) A
provider whose ID tokens live seconds shows the session ending when the token does (Streamlit's
own cookie would keep it for 30 days).
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from icecore.catalog import load_catalog
from icecore.launch import app_command
from tests.icecore.evolution.hand_table import write_table
from tests.oidc_provider.fixture import USERS, OidcProvider, start_provider
from tests.ui.helpers import REPO, tiny_warehouse
from tests.ui.test_browser import _settle, _shot, browser  # noqa: F401

pytestmark = [pytest.mark.slow]

SECRET_ENV = "ICECORE_TEST_APP_CLIENT_SECRET"
OWNED = "db.t"
HIDDEN = "sales.orders"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _allow_sign_out_to(provider: OidcProvider, uri: str) -> None:
    """Register ``uri`` as a post-logout redirect URI of the app's client.

    ``st.logout`` sends the browser to the provider's ``end_session_endpoint`` with the
    callback as ``post_logout_redirect_uri`` (Streamlit's choice), which a provider accepts
    only when registered (README "Signing in to the app").
    """
    with sqlite3.connect(provider.database, timeout=20) as db:
        (current,) = db.execute(
            "SELECT post_logout_redirect_uris FROM oauth2_provider_application WHERE client_id = ?",
            (provider.client_id,),
        ).fetchone()
        db.execute(
            "UPDATE oauth2_provider_application SET post_logout_redirect_uris = ? "
            "WHERE client_id = ?",
            (" ".join([*str(current or "").split(), uri]), provider.client_id),
        )
    db.close()


@contextmanager
def _app(provider: OidcProvider, root: Path) -> Iterator[tuple[str, str]]:
    """``icecore app`` with ``[auth]`` on a free port; its URL and the warehouse."""
    warehouse = root / "warehouse"
    write_table(warehouse, 2, "t")
    tiny_warehouse(warehouse, HIDDEN)
    config = root / "icecore.toml"
    config.write_text(
        "[auth]\n"
        f'issuer = "{provider.issuer}"\n'
        f'client_id = "{provider.client_id}"\n'
        f'client_secret_env = "{SECRET_ENV}"\n'
        "\n[[grants]]\n"
        'group = "analysts"\nrole = "reader"\ntables = ["db.*"]\n'
        "\n[[grants]]\n"
        'group = "sales-owners"\nrole = "owner"\ntables = ["db.*"]\n'
    )
    port = _free_port()
    callback = f"http://127.0.0.1:{port}/oauth2callback"
    provider.add_redirect_uri(callback)
    _allow_sign_out_to(provider, callback)
    environ = {**os.environ, "ICECORE_CONFIG": str(config), SECRET_ENV: provider.client_secret}
    for name in ("ICECORE_READ_ONLY", "ICECORE_OPEN_CATALOGS"):
        environ.pop(name, None)
    with mock.patch.object(tempfile, "tempdir", str(root)):  # its secrets go with the test
        command = app_command(str(warehouse), port=port, address="127.0.0.1", environ=environ)
    log = REPO / "test-artifacts" / "streamlit-sign-in.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command.argv, "--server.headless=true"],
            env={**command.env, "PYTHONPATH": str(REPO)},
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"{command.url}/_stcore/health", timeout=2):
                        break
                except OSError:
                    assert process.poll() is None, f"the app exited; see {log}"
                    assert time.monotonic() < deadline, f"the app did not start; see {log}"
                    time.sleep(0.3)
            yield command.url, str(warehouse)
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _sign_in(browser: Any, base: str, user: str, authorize: str) -> tuple[Any, list[str]]:  # noqa: F811
    """A new browser session signed in as ``user`` through the provider's login form.

    Returns the page and the authorization requests the browser sent to the provider.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.url.startswith(authorize) else None)
    page.goto(base)
    _settle(page)
    page.get_by_role("button", name="Sign in", exact=True).click(timeout=60_000)
    page.get_by_label("Username").wait_for(timeout=60_000)
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(USERS[user].password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(re.escape(base) + r"/?(\?.*)?$"), timeout=60_000)
    _settle(page)
    return page, sent


def _namespaces(page: Any) -> list[str]:
    """The options of the sidebar's Namespace picker."""
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").filter(has_text="Namespace").first.click()
    options = [o.strip() for o in page.get_by_role("option").all_inner_texts()]
    page.keyboard.press("Escape")
    return options


def test_a_reader_and_an_owner_sign_in_and_see_what_their_roles_allow(
    oidc_provider: OidcProvider,
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    authorize = oidc_provider.discovery()["authorization_endpoint"]
    with _app(oidc_provider, tmp_path) as (base, warehouse):
        # Before signing in: a sign-in button and nothing else.
        anonymous = browser.new_page()
        anonymous.goto(f"{base}/Overview?catalog={warehouse}&table={OWNED}")
        _settle(anonymous)
        anonymous.get_by_role("button", name="Sign in", exact=True).wait_for()
        assert anonymous.get_by_test_id("stSelectbox").count() == 0
        assert OWNED not in anonymous.get_by_test_id("stMain").inner_text()
        anonymous.close()

        ana, requests_sent = _sign_in(browser, base, "ana", authorize)
        (request,) = requests_sent[:1]
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request).query)
        assert query["code_challenge_method"] == ["S256"]
        assert len(query["code_challenge"][0]) >= 43, "a S256 challenge is 43 characters"
        assert query["client_id"] == [oidc_provider.client_id]
        assert set(query["scope"][0].split()) >= {"openid", "profile", "email"}
        sidebar = ana.get_by_test_id("stSidebar")
        sidebar.get_by_text(f"Signed in as {USERS['ana'].name}").wait_for()
        assert sidebar.get_by_role("button", name="Sign out").is_visible()
        ana.get_by_role("heading", name="1 table").wait_for()
        assert _namespaces(ana) == ["db"], "sales.orders is outside her grants"
        _shot(ana, "sign_in_reader_tables")
        # A link to the table without a grant says what a missing table says.
        ana.goto(f"{base}/Overview?catalog={warehouse}&table={HIDDEN}")
        _settle(ana)
        error = ana.get_by_test_id("stAlertContentError").inner_text()
        assert "no grant" in error and HIDDEN in error
        # Evolution: a dry run, but no commit control, and the role it needs.
        ana.goto(f"{base}/Evolution?catalog={warehouse}&table={OWNED}")
        _settle(ana)
        main = ana.get_by_test_id("stMain")
        main.get_by_text("Committing changes needs the owner role").wait_for()
        main.get_by_test_id("stRadio").get_by_text("Properties").click()
        _settle(ana)
        for label, value in (("Set property", "team"), ("to value", "analysts")):
            box = ana.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Enter")
            _settle(ana)
        main.get_by_text("set property team = analysts").first.wait_for()
        assert ana.get_by_role("button", name="Commit", exact=True).count() == 0
        assert ana.get_by_test_id("stCheckbox").count() == 0
        _shot(ana, "sign_in_reader_evolution")
        ana.context.close()

        owen, _ = _sign_in(browser, base, "owen", authorize)
        owen.get_by_test_id("stSidebar").get_by_text(
            f"Signed in as {USERS['owen'].name}"
        ).wait_for()
        owen.get_by_role("heading", name="1 table").wait_for()
        assert _namespaces(owen) == ["db"]
        owen.goto(f"{base}/Evolution?catalog={warehouse}&table={OWNED}")
        _settle(owen)
        main = owen.get_by_test_id("stMain")
        main.get_by_test_id("stRadio").get_by_text("Properties").click()
        _settle(owen)
        for label, value in (("Set property", "team"), ("to value", "sales")):
            box = owen.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Enter")
            _settle(owen)
        before = load_catalog(warehouse).load_table(OWNED)
        assert "team" not in before.metadata.properties
        owen.get_by_test_id("stCheckbox").filter(has_text="I have read the dry run").click()
        _settle(owen)
        owen.get_by_role("button", name="Commit", exact=True).click()
        _settle(owen)
        owen.get_by_test_id("stAlertContentSuccess").wait_for()
        _shot(owen, "sign_in_owner_committed")
        after = load_catalog(warehouse).load_table(OWNED)
        assert after.metadata_location != before.metadata_location
        assert after.metadata.properties["team"] == "sales"
        # Sign out: back to the sign-in button.
        owen.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
        owen.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=60_000)
        owen.context.close()


TOKEN_SECONDS = 25
"""The ID token lifetime of the provider the expiry test starts (a sign-in takes seconds)."""


def test_a_session_ends_when_its_id_token_expires(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    app_root = tmp_path / "app"
    app_root.mkdir()
    with (
        start_provider(tmp_path, token_seconds=TOKEN_SECONDS) as provider,
        _app(provider, app_root) as (base, _),
    ):
        started = time.time()  # the token is issued after this
        page, _ = _sign_in(browser, base, "ana", provider.discovery()["authorization_endpoint"])
        signed_in = page.get_by_test_id("stSidebar").get_by_text(
            f"Signed in as {USERS['ana'].name}"
        )
        signed_in.wait_for()
        sign_in = page.get_by_role("button", name="Sign in", exact=True)
        # Every run checks the token's exp: run the page again until it asks to sign in.
        deadline = started + TOKEN_SECONDS + 90
        while not sign_in.is_visible():
            assert time.time() < deadline, "the session outlived its ID token"
            page.reload()
            _settle(page)
        assert time.time() >= started + TOKEN_SECONDS, "signed out before the token expired"
        assert page.get_by_test_id("stSelectbox").count() == 0
        page.context.close()

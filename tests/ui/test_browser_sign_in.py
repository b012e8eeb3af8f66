"""In chromium: people sign in through a real OpenID Connect provider and see what they may.

The app is started as ``icecore app`` starts it (:func:`icecore.launch.app_command`: the
Streamlit auth secrets generated from icecore.toml's ``[auth]``, the client secret from the
environment) over a warehouse of three tables: the hand-written ``db.t``, ``db.people`` with
rows (:mod:`tests.ui.rows_table`, written by PyIceberg) and the empty ``sales.orders``; with
grants: ``analysts`` read ``db.*``, ``sales-owners`` own ``db.*``, ``viewers`` view ``db.*``,
and nobody has ``sales.orders``. The provider is django-oauth-toolkit (tests/oidc_provider),
whose login form each user fills in; one app serves them all and each signs in once.
``owen`` (owner) commits a property on Evolution, which the table's metadata then holds (read
with icecore from the warehouse, not from the page). ``ana`` (reader) sees her name, only the
``db`` tables, no commit control on Evolution, the rows of ``db.people`` on Scan preview, and
owen's commit on Activity under his name, but not a change to ``sales.orders`` the log holds.
``vic`` (viewer) opens every page of the app on ``db.people`` and no page shows one of its
values (issue 31, Tests: "the viewer sees no row value on any page"). The authorization
request the app sends carries a PKCE S256 challenge. A provider whose ID tokens live seconds
shows the session ending when the token does (Streamlit's own cookie would keep it for 30
days).
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

from icecore.access import Grant, Policy, Principal, Role
from icecore.catalog import load_catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.guarded import guard
from icecore.launch import app_command
from tests.icecore.evolution.hand_table import write_table
from tests.oidc_provider.fixture import USERS, OidcProvider, start_provider
from tests.ui import rows_table
from tests.ui.helpers import REPO, tiny_warehouse
from tests.ui.test_browser import _settle, _shot, browser  # noqa: F401
from ui.app import PAGES, Page

pytestmark = [pytest.mark.slow]

SECRET_ENV = "ICECORE_TEST_APP_CLIENT_SECRET"
OWNED = "db.t"
ROWS = rows_table.NAME
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


def _url_path(page: Page) -> str:
    """The URL path Streamlit gives a page of ``pages/`` (its file name without the number)."""
    return Path(page.file).stem.split("_", 1)[1]


@contextmanager
def _app(provider: OidcProvider, root: Path) -> Iterator[tuple[str, str]]:
    """``icecore app`` with ``[auth]`` on a free port; its URL and the warehouse."""
    warehouse = root / "warehouse"
    write_table(warehouse, 2, "t")
    rows_table.write_rows_table(warehouse, root / "peer")
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
        "\n[[grants]]\n"
        'group = "viewers"\nrole = "viewer"\ntables = ["db.*"]\n'
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


def _shown(page: Any) -> str:
    """Everything the page holds as text, in each of its tabs, dataframe cells included.

    Each tab is opened in turn (a dataframe in a hidden tab is not drawn). A dataframe
    draws its cells on a canvas, which no text of the page holds; the grid also writes the
    drawn cells into an accessible table (for screen readers), waited for here. The body's
    ``text_content`` also holds what a closed expander or a tooltip would show.
    """
    tabs = page.get_by_role("tab")
    texts = []
    for index in range(max(1, tabs.count())):
        if tabs.count():
            tabs.nth(index).click()
            _settle(page)
        grids = page.get_by_test_id("stDataFrame")
        for grid in (grids.nth(i) for i in range(grids.count())):
            if grid.is_visible():
                grid.locator("[role=row]").first.wait_for(state="attached")
        texts.append(str(page.text_content("body")))
    return "\n".join(texts)


def _open(page: Any, url: str) -> None:
    """Open ``url`` and wait for its run; the run must end without a traceback."""
    page.goto(url)
    _settle(page)
    assert page.get_by_test_id("stException").count() == 0, f"{url}: {page.inner_text('body')}"


def _activity_rows(page: Any) -> list[str]:
    """The rows of the Activity page's table, each as its cells' text."""
    frame = page.get_by_test_id("stDataFrame")
    rows = frame.locator("tbody [role=row]")
    rows.first.wait_for(state="attached")
    return [str(r.text_content()) for r in rows.all()]


def _change_elsewhere(warehouse: str) -> None:
    """A property commit on the ungranted table, made and audited outside the app."""
    catalog = load_catalog(warehouse)
    ops = Principal("u-ops", name="Olga Ops", groups=("ops",), source="oidc")
    guarded = guard(
        catalog,
        ops,
        Policy((Grant("ops", Role.OWNER),)),
        name=warehouse,
        audit=audit_sink_for(catalog),
        source="cli",
    )
    guarded.load_table(HIDDEN).set_properties(ops="yes")


def test_a_reader_an_owner_and_a_viewer_sign_in_and_see_what_their_roles_allow(
    oidc_provider: OidcProvider,
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    authorize = oidc_provider.discovery()["authorization_endpoint"]
    with _app(oidc_provider, tmp_path) as (base, warehouse):
        cities = load_catalog(warehouse).load_table(ROWS).scan().plan().to_arrow()["city"]
        values = sorted(cities.to_pylist())
        assert values == sorted(rows_table.CITIES), "the oracle: icecore reads the rows unguarded"
        link = f"?catalog={warehouse}&table="
        # Before signing in: a sign-in button and nothing else.
        anonymous = browser.new_page()
        anonymous.goto(f"{base}/Overview{link}{OWNED}")
        _settle(anonymous)
        anonymous.get_by_role("button", name="Sign in", exact=True).wait_for()
        assert anonymous.get_by_test_id("stSelectbox").count() == 0
        assert OWNED not in anonymous.get_by_test_id("stMain").inner_text()
        anonymous.close()

        # owen (owner) commits a property on Evolution.
        owen, requests_sent = _sign_in(browser, base, "owen", authorize)
        (request,) = requests_sent[:1]
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request).query)
        assert query["code_challenge_method"] == ["S256"]
        assert len(query["code_challenge"][0]) >= 43, "a S256 challenge is 43 characters"
        assert query["client_id"] == [oidc_provider.client_id]
        assert set(query["scope"][0].split()) >= {"openid", "profile", "email"}
        owen_name = USERS["owen"].name
        owen.get_by_test_id("stSidebar").get_by_text(f"Signed in as {owen_name}").wait_for()
        owen.get_by_role("heading", name="2 tables").wait_for()
        assert _namespaces(owen) == ["db"]
        _open(owen, f"{base}/Evolution{link}{OWNED}")
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
        # Activity: the commit, under owen's name, committed.
        _open(owen, f"{base}/Activity?catalog={warehouse}")
        (commit,) = [r for r in _activity_rows(owen) if OWNED in r]
        assert owen_name in commit and "committed" in commit
        _shot(owen, "sign_in_owner_activity")
        # Sign out: back to the sign-in button.
        owen.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
        owen.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=60_000)
        owen.context.close()

        # A change to the table nobody here may see, in the same log.
        _change_elsewhere(warehouse)
        logged = audit_sink_for(load_catalog(warehouse)).read()  # type: ignore[union-attr]
        assert any(str(e.table) == HIDDEN and e.phase == "outcome" for e in logged)

        # ana (reader): her name, the db tables only, rows, no commit control.
        ana, _ = _sign_in(browser, base, "ana", authorize)
        sidebar = ana.get_by_test_id("stSidebar")
        sidebar.get_by_text(f"Signed in as {USERS['ana'].name}").wait_for()
        # The sidebar renders element by element while the page's script runs: wait.
        sidebar.get_by_role("button", name="Sign out").wait_for(state="visible")
        ana.get_by_role("heading", name="2 tables").wait_for()
        assert _namespaces(ana) == ["db"], "sales.orders is outside her grants"
        _shot(ana, "sign_in_reader_tables")
        # A link to the table without a grant says what a missing table says.
        ana.goto(f"{base}/Overview{link}{HIDDEN}")
        _settle(ana)
        error = ana.get_by_test_id("stAlertContentError").inner_text()
        assert "no grant" in error and HIDDEN in error
        # Scan preview shows her the rows: the viewer's check below could fail.
        _open(ana, f"{base}/Scan_preview{link}{ROWS}")
        shown = _shown(ana)
        assert all(city in shown for city in values), shown
        # Evolution: a dry run, but no commit control, and the role it needs.
        _open(ana, f"{base}/Evolution{link}{OWNED}")
        main = ana.get_by_test_id("stMain")
        main.get_by_text("Committing changes needs the owner role").wait_for()
        main.get_by_test_id("stRadio").get_by_text("Properties").click()
        _settle(ana)
        for label, value in (("Set property", "desk"), ("to value", "analysts")):
            box = ana.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Enter")
            _settle(ana)
        main.get_by_text("set property desk = analysts").first.wait_for()
        assert ana.get_by_role("button", name="Commit", exact=True).count() == 0
        assert ana.get_by_test_id("stCheckbox").count() == 0
        _shot(ana, "sign_in_reader_evolution")
        # Activity: owen's commit, and nothing of the table outside her grants.
        _open(ana, f"{base}/Activity?catalog={warehouse}")
        rows = _activity_rows(ana)
        (commit,) = [r for r in rows if OWNED in r]
        assert owen_name in commit and "committed" in commit
        assert not [r for r in rows if HIDDEN in r or "Olga Ops" in r], rows
        shown = _shown(ana)
        assert HIDDEN not in shown and "Olga Ops" not in shown
        _shot(ana, "sign_in_reader_activity")
        ana.context.close()

        # vic (viewer): every page on the table with rows, and none shows a row value.
        vic, _ = _sign_in(browser, base, "vic", authorize)
        vic.get_by_test_id("stSidebar").get_by_text(f"Signed in as {USERS['vic'].name}").wait_for()
        for page in PAGES:
            _open(vic, f"{base}/{_url_path(page)}{link}{ROWS}")
            title = vic.get_by_test_id("stMain").get_by_role("heading", level=1).first
            # of the catalog, no table
            catalog_page = page.title in ("Activity", "Views", "Workload")
            assert (page.title if catalog_page else ROWS) in title.inner_text()
            shown = _shown(vic)
            assert not [city for city in values if city in shown], f"{page.title}: {shown}"
            _shot(vic, f"sign_in_viewer_{_url_path(page).lower()}")
        vic.context.close()


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

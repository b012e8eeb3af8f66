"""Sign-in and roles in the app's pages (issue 31; DESIGN.md "Identity, roles and audit").

The pages run with an icecore.toml holding ``[auth]`` and ``[[grants]]`` over a hand-written
warehouse of two tables (no Spark needed). AppTest has no browser to sign in with, so a
signed-in user is what Streamlit gives a page after the provider's callback: ``st.user``
holding the ID token's claims (``AppTest.user``). The browser test signs in through a real
provider (tests/ui/test_browser_sign_in.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from icecore.access import Principal, Role
from icecore.catalog.guarded import GuardedCatalog
from icecore.errors import Forbidden
from icecore.table_data import access_of
from tests.icecore.evolution.hand_table import write_table
from tests.ui.helpers import TIMEOUT, as_shown, drive, keys, no_problems, texts, tiny_warehouse
from tests.ui.long_history import write_long_history
from ui import app, data, identity
from ui.app import MAIN_SCRIPT

OWNED = "db.t"
OTHER = "sales.orders"
CONFIG = """
[auth]
issuer = "http://127.0.0.1:9/issuer"
client_id = "icecore"

[[grants]]
group = "analysts"
role = "reader"
tables = ["db.*"]

[[grants]]
group = "sales-owners"
role = "owner"
tables = ["db.*"]

[[grants]]
group = "viewers"
role = "viewer"
tables = ["db.*"]

[[grants]]
group = "finance"
role = "reader"
tables = ["sales.*"]
"""


def claims(user: str, group: str, exp: float | None = None) -> dict[str, Any]:
    """What ``st.user`` holds after the provider signed ``user`` in (the ID token's claims).

    Without ``exp`` the token is fresh when the page opens (:func:`open_as` sets it then): a
    module-level user made at collection would otherwise expire in a long run of the suite.
    """
    return {
        "is_logged_in": True,
        "sub": f"sub-{user}",
        "name": user.title(),
        "preferred_username": user,
        "groups": [group],
        **({} if exp is None else {"exp": exp}),
    }


ANA = claims("ana", "analysts")
OWEN = claims("owen", "sales-owners")


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A warehouse of ``db.t`` and ``sales.orders``, served with ``[auth]`` and grants."""
    warehouse = tmp_path / "warehouse"
    write_table(warehouse, 2, "t")
    tiny_warehouse(warehouse, OTHER)
    config = tmp_path / "icecore.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.setenv("ICECORE_CATALOG", str(warehouse))
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    monkeypatch.delenv("ICECORE_OPEN_CATALOGS", raising=False)
    data.forget_table_lists()
    return str(warehouse)


def open_as(user: dict[str, Any] | None, page: str | None = None, **params: str) -> AppTest:
    """Run the main script (then ``page``) for a session whose ``st.user`` is ``user``."""
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=TIMEOUT)
    if user is not None:
        at.user = {"exp": int(time.time() + 600), **user}
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    return at


def listed(at: AppTest) -> list[str]:
    """The tables of the landing page's listing."""
    if not at.dataframe:
        return []
    return [str(t) for t in at.dataframe[0].value["table"]]


def test_without_auth_nobody_signs_in(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICECORE_CONFIG", str(Path(served).parent / "none.toml"))
    at = open_as(None)
    no_problems(at)
    assert identity.SIGN_IN_LABEL not in [b.label for b in at.button]
    assert identity.SIGN_OUT_LABEL not in [b.label for b in at.sidebar.button]
    assert sorted(listed(at)) == sorted([OWNED, OTHER])


@pytest.mark.parametrize("page", [None, *[p.file for p in app.PAGES]])
def test_with_auth_a_visitor_sees_a_sign_in_button_and_nothing_else(
    served: str, page: str | None
) -> None:
    at = open_as(None, page, catalog=served, table=OWNED)
    assert not at.exception
    assert [b.label for b in at.button] == [identity.SIGN_IN_LABEL]
    assert not at.sidebar.selectbox and not at.dataframe and not at.metric
    assert OWNED not in texts(at)


def test_a_signed_in_user_sees_their_name_and_only_their_tables(served: str) -> None:
    at = open_as(ANA)
    no_problems(at)
    assert listed(at) == [OWNED]
    assert "Signed in as Ana" in [t.value for t in at.sidebar.text]
    assert identity.SIGN_OUT_LABEL in [b.label for b in at.sidebar.button]
    # The sidebar's pickers offer only what the grants show.
    namespaces = at.sidebar.selectbox(key="sb_namespace").options
    assert namespaces == ["db"]


def test_a_listing_cached_for_one_person_is_not_served_to_another(served: str) -> None:
    finance = claims("fay", "finance")
    first = open_as(OWEN)
    assert listed(first) == [OWNED]
    second = open_as(finance)  # the shared listing is cached now
    assert listed(second) == [OTHER]
    assert listed(open_as(ANA)) == [OWNED]


def test_a_link_to_a_table_without_a_grant_reads_as_one_that_does_not_exist(
    served: str,
) -> None:
    refused = open_as(ANA, app.OVERVIEW.file, catalog=served, table=OTHER)
    missing = open_as(ANA, app.OVERVIEW.file, catalog=served, table="sales.nope")
    (one,) = [as_shown(e.value) for e in refused.error]
    (two,) = [as_shown(e.value) for e in missing.error]
    assert "no grant" in one
    assert one.replace(OTHER, "X") == two.replace("sales.nope", "X")
    assert not refused.metric, "nothing of the table is shown"


def test_an_expired_token_signs_the_session_out(served: str) -> None:
    at = open_as(claims("ana", "analysts", exp=time.time() - 1))
    assert not at.exception
    assert [b.label for b in at.button] == [identity.SIGN_IN_LABEL]
    assert not at.dataframe
    assert at.user.get("is_logged_in") is False


def test_evolution_offers_a_reader_no_commit_and_says_which_role_it_needs(served: str) -> None:
    steps = (
        ("radio", "evo_kind", "Properties"),
        ("text_input", "evo_f_prop_key", "team"),
        ("text_input", "evo_f_prop_value", "data"),
    )
    reader = drive(open_as(ANA, app.EVOLUTION.file, catalog=served, table=OWNED), *steps)
    no_problems(reader)
    assert "evo_commit" not in keys(reader.button)
    assert "evo_confirm" not in keys(reader.checkbox)
    assert any(
        "needs the owner role" in as_shown(c.value) and "reader role" in as_shown(c.value)
        for c in reader.caption
    )
    owner = drive(open_as(OWEN, app.EVOLUTION.file, catalog=served, table=OWNED), *steps)
    no_problems(owner)
    assert "evo_commit" in keys(owner.button)
    assert not any("needs the owner role" in c.value for c in owner.caption)


def test_maintenance_is_hidden_from_a_reader(served: str) -> None:
    at = open_as(ANA, app.MAINTENANCE.file, catalog=served, table=OWNED)
    no_problems(at)
    assert any("needs the owner role" in as_shown(c.value) for c in at.caption)
    assert not at.main.button


# --- the shared caches, per principal (ui.data outside a page) ---------------------------


def _as(monkeypatch: pytest.MonkeyPatch, user: str, group: str) -> Principal:
    principal = Principal(subject=f"sub-{user}", name=user, groups=(group,), source="oidc")
    monkeypatch.setattr(identity, "current_principal", lambda: principal)
    return principal


def test_a_shared_table_is_bound_to_each_session_s_guarded_catalog(
    served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    owen = _as(monkeypatch, "owen", "sales-owners")
    mine = data.open_table(served, OWNED)
    assert isinstance(mine.catalog, GuardedCatalog) and mine.catalog.principal == owen
    assert access_of(mine).role is Role.OWNER
    ana = _as(monkeypatch, "ana", "analysts")
    theirs = data.open_table(served, OWNED)  # the same shared version, another session
    assert theirs.metadata is mine.metadata, "the parsed metadata is shared"
    assert isinstance(theirs.catalog, GuardedCatalog) and theirs.catalog.principal == ana
    assert access_of(theirs).role is Role.READER
    pinned = data.table_at(served, OWNED, mine.metadata_location)
    assert access_of(pinned).role is Role.READER
    with pytest.raises(Forbidden):
        data.open_table(served, OTHER)
    with pytest.raises(Forbidden):
        data.metadata_location(served, OTHER)
    with pytest.raises(Forbidden):
        data.table_at(served, OTHER, "ignored")


def test_users_named_by_request_headers_are_refused(served: str) -> None:
    from streamlit import config

    before = config.get_option("server.trustedUserHeaders")
    config.set_option("server.trustedUserHeaders", {"X-User": "sub"})
    try:
        at = open_as(ANA)
    finally:
        config.set_option("server.trustedUserHeaders", before)
    assert not at.exception
    assert [e.value for e in at.error] == [identity.HEADERS_REFUSED]
    assert not at.dataframe and not at.button


def test_grants_without_auth_show_nothing_and_say_why(
    served: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "grants-only.toml"
    config.write_text("[[grants]]" + CONFIG.split("[[grants]]", 1)[1])
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    at = open_as(ANA)
    assert not at.exception
    assert listed(at) == []
    assert any("no [auth]" in w.value for w in at.warning)


def test_history_offers_ref_actions_to_an_owner_only(served: str) -> None:
    write_long_history(Path(served), 30)  # db.long: snapshots, refs; metadata only
    link = {"catalog": served, "table": "db.long"}
    reader = open_as(ANA, app.HISTORY.file, **link)
    no_problems(reader)
    assert not [s for s in reader.subheader if s.value.startswith("Act on snapshot")]
    assert any("needs the owner role" in as_shown(c.value) for c in reader.caption)
    owner = open_as(OWEN, app.HISTORY.file, **link)
    no_problems(owner)
    assert [s for s in owner.subheader if s.value.startswith("Act on snapshot")]
    assert not any("needs the owner role" in as_shown(c.value) for c in owner.caption)


def test_a_viewer_sees_the_table_and_is_told_evolution_needs_the_owner_role(served: str) -> None:
    vic = claims("vic", "viewers")
    overview = open_as(vic, app.OVERVIEW.file, catalog=served, table=OWNED)
    no_problems(overview)
    assert overview.metric, "a viewer sees the metadata"
    evolution = open_as(vic, app.EVOLUTION.file, catalog=served, table=OWNED)
    no_problems(evolution)
    (said,) = [as_shown(c.value) for c in evolution.caption if "needs the owner role" in c.value]
    assert said == f"Committing changes needs the owner role on {OWNED}; you have the viewer role."


def test_a_person_without_a_grant_is_told_so_not_that_the_catalog_is_empty(served: str) -> None:
    at = open_as(claims("nina", "nobody"))
    no_problems(at)
    assert listed(at) == []
    assert [i.value for i in at.info] == [
        "No table of this catalog is yours to see: your grants name none of them."
    ]

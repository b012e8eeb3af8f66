"""Who is using this app session, and the catalogs as they may see them.

With no ``[auth]`` and no ``[[grants]]`` in icecore.toml (a workstation, ``make run``) there is
no sign-in: the principal is the OS user running the app and every table is theirs. With
``[auth]``, every page requires a signed-in user (:func:`require_sign_in`, called by
``ui.shell.bootstrap`` before anything else): Streamlit's own ``st.login`` signs them in with
the issuer (``icecore app`` generated its secrets from ``[auth]``: :mod:`icecore.launch`),
and :func:`current_principal` reads them from ``st.user``, the claims of the ID token the
provider signed; nothing a visitor can set (query parameters, session state, headers) names a
principal. Every catalog a page opens is wrapped by :func:`icecore.catalog.guarded.guard`,
which enforces their grants where the action happens (DESIGN.md "Identity, roles and audit").
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import streamlit as st

from icecore.access import (
    AuthConfig,
    Policy,
    Principal,
    os_principal,
    principal_from_claims,
)
from icecore.catalog import Catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.guarded import GuardedCatalog, guard
from icecore.config import load_config

ANONYMOUS = Principal(subject="anonymous")
"""A session with a policy and nobody signed in: no groups, so no grant and no table."""

SIGN_IN_LABEL = "Sign in"
SIGN_OUT_LABEL = "Sign out"


def policy() -> Policy | None:
    """The deployment's grants, or None when it has none (then everyone has every table)."""
    return load_config().policy


def auth() -> AuthConfig | None:
    """The deployment's ``[auth]`` section, or None (then nobody signs in)."""
    return load_config().auth


HEADERS_REFUSED = (
    "This app signs people in with OpenID Connect ([auth] in icecore.toml), but Streamlit is "
    "configured to take users from request headers (server.trustedUserHeaders), which a "
    "visitor could set: remove that setting to serve this app."
)


def headers_name_users() -> bool:
    """Whether Streamlit fills ``st.user`` from request headers (``server.trustedUserHeaders``).

    Such headers override the signed cookie of the provider's sign-in, and any client can send
    them unless a proxy strips them: with ``[auth]`` they are refused, never trusted.
    """
    return bool(st.get_option("server.trustedUserHeaders"))


def _claims() -> Mapping[str, object] | None:
    """The signed-in user's ID token claims (``st.user``), or None when nobody is signed in."""
    if headers_name_users():
        return None
    user = st.user.to_dict()
    if not user.get("is_logged_in"):
        return None
    return user


def current_principal() -> Principal:
    """Who this session is.

    No policy: the OS user running the app (a workstation). With ``[auth]``: the signed-in
    user as the ID token's claims describe them (``groups_claim`` holds their groups), or
    :data:`ANONYMOUS` before sign-in. A policy without ``[auth]`` (grants for the REST
    server's own clients only) signs nobody in to the app: :data:`ANONYMOUS`.
    """
    found = policy()
    if found is None:
        return os_principal()
    config = auth()
    claims = _claims() if config is not None else None
    if config is None or claims is None:
        return ANONYMOUS
    return principal_from_claims(claims, config.groups_claim)


def expired(principal: Principal, now: float | None = None) -> bool:
    """Whether ``principal``'s token has ended (its ID token's ``exp`` has passed)."""
    if principal.expires_at is None:
        return False
    return principal.expires_at <= (time.time() if now is None else now)


def require_sign_in() -> Principal:
    """The session's principal; with ``[auth]``, a signed-in one, or the page stops.

    Nobody signed in: a sign-in button and nothing else. A session whose ID token has
    expired is signed out (Streamlit's cookie outlives the token; the token is the session),
    which sends the browser to the provider's sign-out and back.
    """
    principal = current_principal()
    if auth() is None:
        if principal is ANONYMOUS:
            st.warning(
                "This deployment has [[grants]] but no [auth] in icecore.toml: nobody can sign "
                "in to the app, so it shows no table.",
                icon=":material/lock:",
            )
        return principal
    if headers_name_users():
        st.error(HEADERS_REFUSED, icon=":material/error:")
        st.stop()
    if principal is not ANONYMOUS and expired(principal):
        st.logout()
        principal = ANONYMOUS
    if principal is ANONYMOUS:
        st.title("Icecore")
        st.info(
            "This explorer is shared by a team: sign in to see the tables your grants allow.",
            icon=":material/lock:",
        )
        if st.button(SIGN_IN_LABEL, key="auth_sign_in", type="primary"):
            st.login()
        st.stop()
    return principal


def show_signed_in() -> None:
    """Who is signed in (their name, as text) and a sign-out button, in the sidebar.

    Nothing without ``[auth]``: a workstation has nobody to sign out.
    """
    if auth() is None:
        return
    principal = current_principal()
    if principal is ANONYMOUS:
        return
    st.sidebar.text(f"Signed in as {principal.name or principal.subject}")
    if st.sidebar.button(SIGN_OUT_LABEL, key="auth_sign_out"):
        st.logout()


def guarded(catalog: Catalog, name: str) -> GuardedCatalog:
    """``catalog`` (served as ``name``) as this session's principal may see and change it."""
    return guard(
        catalog,
        current_principal(),
        policy(),
        name=name,
        audit=audit_sink_for(catalog),
        source="app",
    )

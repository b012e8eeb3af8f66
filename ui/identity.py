"""Who is using this app session, and the catalogs as they may see them.

With no ``[auth]`` and no ``[[grants]]`` in icecore.toml (a workstation, ``make run``) there is
no sign-in: the principal is the OS user running the app and every table is theirs. With
``[auth]``, every page requires a signed-in user (:func:`current_principal` reads them from
Streamlit's ``st.user``), and every catalog a page opens is wrapped by
:func:`icecore.catalog.guarded.guard`, which enforces their grants where the action happens.
"""

from __future__ import annotations

from icecore.access import Policy, Principal, os_principal
from icecore.catalog import Catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.guarded import GuardedCatalog, guard
from icecore.config import load_config


def policy() -> Policy | None:
    """The deployment's grants, or None when it has none (then everyone has every table)."""
    return load_config().policy


def current_principal() -> Principal:
    """Who this session is: the OS user where there is no policy.

    With a policy and no signed-in user: an anonymous principal with no groups, who sees
    nothing (the sign-in part of issue 31 reads the signed-in user from ``st.user``).
    """
    if policy() is None:
        return os_principal()
    return Principal(subject="anonymous")


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

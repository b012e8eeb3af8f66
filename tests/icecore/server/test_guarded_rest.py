"""The guard over a REST catalog: commits are updates there, and they are checked and recorded.

A real ``serve-rest`` process holds the table (written by PyIceberg, a peer client); Icecore's
own REST client is wrapped by :func:`icecore.catalog.guarded.guard` as the app wraps it.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PeerCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from icecore.access import Grant, Policy, Principal, Role
from icecore.catalog.guarded import guard
from icecore.catalog.rest import RestCatalog
from icecore.errors import Forbidden
from icecore.identifier import TableIdentifier
from icecore.table_data import access_of
from tests.icecore.catalog.memory_sink import MemorySink
from tests.icecore.server.conftest import RestServer

POLICY = Policy(
    (
        Grant("owners", Role.OWNER, ("grd.*",)),
        Grant("readers", Role.READER, ("grd.*",), frozenset({"id"})),
    )
)
IDENT = TableIdentifier(("grd",), "t")


@pytest.fixture(scope="module")
def served(rest_server: RestServer) -> RestServer:
    peer = PeerCatalog("peer", uri=rest_server.url)
    peer.create_namespace("grd")
    table = peer.create_table("grd.t", Schema(NestedField(1, "id", LongType(), required=False)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    return rest_server


def test_an_owner_commits_through_a_guarded_rest_catalog(served: RestServer) -> None:
    sink = MemorySink()
    rest = RestCatalog(served.url)
    owners = guard(rest, Principal("o-1", "Olga", ("owners",)), POLICY, name="r", audit=sink)
    table = owners.load_table(IDENT)
    assert table.catalog is owners and access_of(table).role is Role.OWNER
    before = table.metadata_location
    committed = table.set_properties(reviewed="yes")
    now = rest.load_table(IDENT)
    assert now.metadata_location == committed.metadata_location != before
    assert now.metadata.properties["reviewed"] == "yes"
    # still bound to the guard, so the next change is checked and recorded too
    assert committed.catalog is owners
    committed.remove_properties("reviewed")
    assert "reviewed" not in rest.load_table(IDENT).metadata.properties
    assert [(e.phase, e.result) for e in sink.events] == [
        ("intent", "started"),
        ("outcome", "committed"),
    ] * 2
    first_intent, first_outcome = sink.events[:2]
    assert first_intent.id == first_outcome.id and first_intent.summary == "properties: reviewed"
    assert (first_outcome.metadata_before, first_outcome.metadata_after) == (
        before,
        committed.metadata_location,
    )


def test_a_reader_cannot_commit_through_a_guarded_rest_catalog(served: RestServer) -> None:
    sink = MemorySink()
    rest = RestCatalog(served.url)
    readers = guard(rest, Principal("r-1", "Rui", ("readers",)), POLICY, name="r", audit=sink)
    table = readers.load_table(IDENT)
    assert access_of(table).masks("id")
    before = rest.load_table(IDENT).metadata_location
    with pytest.raises(Forbidden, match="needs the owner role"):
        table.set_properties(reviewed="no")
    assert rest.load_table(IDENT).metadata_location == before
    assert [(e.result, e.subject) for e in sink.events] == [("refused", "r-1")]
    outsider = guard(rest, Principal("x"), POLICY, name="r", audit=sink)
    assert outsider.list_tables() == []
    with pytest.raises(Forbidden):
        outsider.load_table(IDENT)

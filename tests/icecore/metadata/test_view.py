"""View metadata (view-spec.md): the spec's own example files, round trips and the updates."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.metadata.updates import AddSchema, AssignUUID, SetProperties
from icecore.metadata.view import (
    VERSION_HISTORY_SIZE,
    AddViewVersion,
    SetCurrentViewVersion,
    apply_view_updates,
    parse_view_metadata,
    view_metadata_from_json,
    view_metadata_to_json,
    view_update_from_json,
    view_updates_from_json,
    view_uuid_requirement,
    view_version_from_json,
)
from icecore.schema import schema_from_json

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "view-spec.md"
_SPEC_CANDIDATES = [SPEC, Path("/work/shared/spec/view-spec.md")]


def _spec_examples() -> list[dict]:
    """The two metadata JSON files of the spec's "Appendix A: An Example"."""
    path = next((p for p in _SPEC_CANDIDATES if p.is_file()), None)
    if path is None:
        pytest.skip("the view spec is not beside the repository")
    blocks = re.findall(r"```json\n(.*?)```", path.read_text(), re.S)
    return [json.loads(b) for b in blocks if '"view-uuid"' in b]


def test_the_specs_examples_parse_and_round_trip() -> None:
    first, second = _spec_examples()
    md = view_metadata_from_json(first)
    assert md.view_uuid == first["view-uuid"]
    assert md.current_version.sql("SPARK") == first["versions"][0]["representations"][0]["sql"]
    assert md.current_version.default_namespace == ("default",)
    assert md.current_version.default_catalog == "prod"
    assert md.current_schema is not None
    assert [f.name for f in md.current_schema.fields] == ["event_count", "event_date"]
    for example in (first, second):
        assert view_metadata_to_json(view_metadata_from_json(example)) == example


def test_unknown_fields_are_kept_at_every_level() -> None:
    raw = copy.deepcopy(_spec_examples()[0])
    raw["x-top"] = {"a": 1}
    raw["versions"][0]["x-version"] = [1]
    raw["versions"][0]["representations"][0]["x-rep"] = "r"
    raw["versions"][0]["representations"].append({"type": "substrait", "plan": "..."})
    raw["version-log"][0]["x-log"] = True
    again = view_metadata_to_json(parse_view_metadata(json.dumps(raw)))
    assert again == raw


def test_reading_refuses_what_breaks_the_spec() -> None:
    raw = _spec_examples()[0]
    with pytest.raises(Unsupported):
        view_metadata_from_json({**raw, "format-version": 2})
    with pytest.raises(InvalidMetadata, match="current version 7"):
        view_metadata_from_json({**raw, "current-version-id": 7})
    with pytest.raises(InvalidMetadata):
        view_metadata_from_json({k: v for k, v in raw.items() if k != "versions"})
    with pytest.raises(InvalidMetadata, match="not valid JSON"):
        parse_view_metadata(b'{"view-uuid": ')


def _replace_updates(example: dict) -> list:
    """What a ``CREATE OR REPLACE VIEW`` commits: the second example's new version."""
    return view_updates_from_json(
        [
            {"action": "add-schema", "schema": example["schemas"][0]},
            {
                "action": "add-view-version",
                "view-version": {**example["versions"][1], "schema-id": -1},
            },
            {"action": "set-current-view-version", "view-version-id": -1},
        ]
    )


def test_replacing_gives_the_specs_second_file() -> None:
    first, second = _spec_examples()
    after = apply_view_updates(view_metadata_from_json(first), _replace_updates(second))
    assert view_metadata_to_json(after) == second


def test_a_retried_replace_reuses_the_version_instead_of_adding_it_twice() -> None:
    first, second = _spec_examples()
    once = apply_view_updates(view_metadata_from_json(first), _replace_updates(second))
    twice = apply_view_updates(once, _replace_updates(second))
    assert [v.version_id for v in twice.versions] == [1, 2]
    assert len(twice.schemas) == 1
    assert twice.version_log == once.version_log  # already current: no log entry


def test_going_back_to_an_older_version_logs_it_again() -> None:
    first, second = _spec_examples()
    md = view_metadata_from_json(second)
    back = apply_view_updates(md, [SetCurrentViewVersion(1)])
    assert back.current_version_id == 1
    assert [e.version_id for e in back.version_log] == [1, 2, 1]
    assert back.version_log[-1].timestamp_ms > md.version_log[-1].timestamp_ms


def test_a_new_view_from_updates() -> None:
    first = _spec_examples()[0]
    version = view_version_from_json({**first["versions"][0], "schema-id": -1})
    md = apply_view_updates(
        None,
        [
            AssignUUID(first["view-uuid"]),
            AddSchema(schema_from_json(first["schemas"][0]), None),
            AddViewVersion(version),
            SetCurrentViewVersion(-1),
            SetProperties(first["properties"]),
        ],
        location=first["location"],
    )
    assert view_metadata_to_json(md) == first


def test_the_history_size_bounds_versions_and_the_log() -> None:
    first = _spec_examples()[0]
    md = view_metadata_from_json(first)
    md = apply_view_updates(md, [SetProperties({VERSION_HISTORY_SIZE: "2"})])
    for i in range(3):
        raw = {**first["versions"][0], "version-id": 1, "summary": {"n": str(i)}}
        md = apply_view_updates(
            md, [AddViewVersion(view_version_from_json(raw)), SetCurrentViewVersion(-1)]
        )
    assert [v.version_id for v in md.versions] == [3, 4]
    assert [e.version_id for e in md.version_log] == [3, 4]
    assert md.current_version_id == 4


def test_updates_that_cannot_apply_are_refused() -> None:
    first = _spec_examples()[0]
    md = view_metadata_from_json(first)
    raw = first["versions"][0]
    with pytest.raises(ValidationError, match="no version was added"):
        apply_view_updates(md, [SetCurrentViewVersion(-1)])
    with pytest.raises(ValidationError, match="unknown schema"):
        apply_view_updates(md, [AddViewVersion(view_version_from_json({**raw, "schema-id": 5}))])
    two = {**raw, "representations": raw["representations"] * 2}
    with pytest.raises(ValidationError, match="one per dialect"):
        apply_view_updates(md, [AddViewVersion(view_version_from_json(two))])
    with pytest.raises(ValidationError, match="reassign"):
        apply_view_updates(md, [AssignUUID("00000000-0000-0000-0000-000000000000")])
    with pytest.raises(InvalidMetadata, match="Unknown view update"):
        view_update_from_json({"action": "add-snapshot", "snapshot": {}})
    assert view_uuid_requirement([{"type": "assert-view-uuid", "uuid": "u"}]) == "u"
    with pytest.raises(InvalidMetadata):
        view_uuid_requirement([{"type": "assert-table-uuid", "uuid": "u"}])

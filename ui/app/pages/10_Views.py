"""Views: a catalog's Iceberg views, one view's SQL per dialect, versions, schema and lineage.

Issue 35 (view-spec.md): every fact comes from the view's metadata file; the SQL is shown as
text (``st.code``, never rendered), and the relations it reads are parsed from it
(:mod:`icecore.view_lineage`), each a link to its page. The view to show comes from the
``view`` query parameter or the picker, and only a view this session may list is opened.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import streamlit as st

from icecore.errors import IcecoreError
from icecore.view_lineage import ELSEWHERE, MISSING, TABLE, VIEW
from ui import data, views
from ui.shell import bootstrap, escape_markdown, show_error, stop

VIEW_PARAM = "view"

context = bootstrap("Views")
st.title("Views")
if context.failed:
    stop()
catalog = context.catalog
try:
    names = data.view_names(catalog)
except IcecoreError as error:
    show_error(error)
    stop()
st.caption(
    f"{escape_markdown(catalog)} · {views.count_of(len(names), 'view')}. A view is a stored "
    "SELECT that engines share across dialects (Iceberg view spec)."
)
if not names:
    st.info("No views in this catalog (or none your grants name).")
    stop()

asked = st.query_params.get(VIEW_PARAM)
index = names.index(asked) if asked in names else None
if asked and index is None:
    st.warning(f"No view named {escape_markdown(views.clip(asked))} is listed in this catalog.")
picked = st.selectbox("View", names, index=index if index is not None else 0, key="views_pick")
if picked != asked:
    st.query_params[VIEW_PARAM] = picked

try:
    detail = data.view_detail(catalog, picked)
except IcecoreError as error:
    show_error(error)
    stop()

versions = detail["versions"]
current = next(v for v in versions if v["version_id"] == detail["current_version_id"])
cols = st.columns(4)
cols[0].metric("Current version", detail["current_version_id"])
cols[1].metric("Versions kept", len(versions))
cols[2].metric("Dialects", len(current["representations"]))
cols[3].metric("Reads", len(detail["reads"]))

st.subheader("SQL")
reps = current["representations"]
if reps:
    tabs = st.tabs([escape_markdown(views.clip(r["dialect"], 40)) for r in reps])
    for tab, rep in zip(tabs, reps, strict=True):
        tab.code(rep["sql"], language="sql", wrap_lines=True)
else:
    st.info("The current version has no SQL representation.")
default_ns = ".".join(current["default_namespace"]) or "(none)"
st.caption(
    f"Unqualified names resolve in namespace {escape_markdown(default_ns)}"
    + (
        f" of catalog {escape_markdown(current['default_catalog'])}"
        if current["default_catalog"]
        else ""
    )
    + "."
)


def _link(name: str, kind: str) -> str | None:
    if kind == TABLE:
        return "Overview?" + urlencode({"catalog": catalog, "table": name})
    if kind == VIEW:
        return "Views?" + urlencode({"catalog": catalog, VIEW_PARAM: name})
    return None


st.subheader("Reads")
kinds = detail["read_kinds"]
if detail["reads"]:
    st.dataframe(
        [
            {"relation": name, "kind": kinds[name], "open": _link(name, kinds[name])}
            for name in detail["reads"]
        ],
        hide_index=True,
        width="stretch",
        column_config={
            "open": st.column_config.LinkColumn("open", display_text="open →"),
            "kind": st.column_config.TextColumn(
                help=f"{TABLE} or {VIEW} of this catalog; {MISSING}: not listed here now "
                f"(dropped, renamed, or not yours to see); {ELSEWHERE}: named with another "
                "catalog's name"
            ),
        },
    )
else:
    st.caption("The SQL names no table or view.")
for problem in detail["unparsed"]:
    st.caption(escape_markdown(f"Not read from the {problem['dialect']} SQL: {problem['reason']}."))

st.subheader("Schema")
if detail["schema"]:
    st.dataframe(
        [
            {
                "id": f.get("id"),
                "name": f.get("name"),
                # A nested type is JSON in the schema; shown as that text.
                "type": f["type"] if isinstance(f.get("type"), str) else json.dumps(f.get("type")),
                "required": f.get("required"),
                "doc": f.get("doc", ""),
            }
            for f in detail["schema"].get("fields", [])
        ],
        hide_index=True,
        width="stretch",
    )
else:
    st.caption("The current version's schema is not in the metadata file.")

st.subheader("Versions")
st.dataframe(
    [
        {
            "version": v["version_id"],
            "current": "✓" if v["version_id"] == detail["current_version_id"] else "",
            "created": views.format_ms(v["timestamp_ms"]),
            "engine": " ".join(
                v["summary"][k] for k in ("engine-name", "engine-version") if v["summary"].get(k)
            ),
            "dialects": ", ".join(r["dialect"] for r in v["representations"]),
            "schema id": v["schema_id"],
            "summary": ", ".join(f"{k}={val}" for k, val in sorted(v["summary"].items())),
        }
        for v in reversed(versions)
    ],
    hide_index=True,
    width="stretch",
)
if len(versions) > 1:
    older = [v for v in versions if v["version_id"] != detail["current_version_id"]]
    chosen = st.selectbox(
        "SQL of an earlier version",
        [v["version_id"] for v in reversed(older)],
        index=None,
        key="views_version",
    )
    if chosen is not None:
        for rep in next(v for v in older if v["version_id"] == chosen)["representations"]:
            st.caption(escape_markdown(rep["dialect"]))
            st.code(rep["sql"], language="sql", wrap_lines=True)

st.subheader("Properties")
if detail["properties"]:
    st.dataframe(
        [{"key": k, "value": v} for k, v in sorted(detail["properties"].items())],
        hide_index=True,
        width="stretch",
    )
else:
    st.caption("No properties.")
st.caption(f"metadata file {escape_markdown(detail['metadata_location'])}")

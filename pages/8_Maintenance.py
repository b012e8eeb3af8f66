"""Maintenance: recommendations with evidence, a dry-run estimate, then the job run on Spark.

Every number before the run comes from icecore (metadata alone); the job itself is
``python -m pipeline.maintenance`` in the background, followed here through its job folder
(ui/jobs.py). Read-only mode hides the page's controls.
"""

from __future__ import annotations

import datetime as dt

import streamlit as st

from icecore.errors import IcecoreError
from icecore.maintenance import Job
from ui import data, evolve_form, jobs, views
from ui.shell import bootstrap, escape_markdown, require_table, show_error, stop

POLL_SECONDS = 2.0
JOBS_KEY = "mt_jobs"  # session state: table key -> id of the last job launched from this page

context = bootstrap("Maintenance")
table, _ = require_table(context)
table_key = f"{context.catalog}::{table.identifier}"

st.title(f"Maintain {escape_markdown(table.identifier)}")
evolve_form.stop_unless_writable(context.read_only, table, "maintenance is hidden.")
st.caption(
    "What the table's health findings would take to fix, the Spark job that fixes each, and "
    "its effect estimated from metadata alone. A job runs on Spark "
    f"(master {escape_markdown(jobs.spark_master())}) in the background, after you confirm it."
)


def show_job(job_id: str) -> None:
    """A job's state, log tail and, once done, its result and a before/after comparison."""
    status = jobs.status(job_id)
    request = status.request
    st.markdown(f"**{escape_markdown(request.get('job', ''))}** · job `{job_id}` · {status.state}")
    if status.state is jobs.State.RUNNING and st.button("Cancel the job", key="mt_cancel"):
        jobs.cancel(job_id)
    st.code("\n".join(status.log_tail) or "(starting…)", language=None)
    if status.error is not None:
        st.error(escape_markdown(status.error), icon=":material/error:")
    if status.result is None:
        return
    result = status.result
    st.success(
        f"Done in {result.get('seconds', 0):.1f}s on Spark.",
        icon=":material/check_circle:",
    )
    st.dataframe(
        views.key_value_rows(result.get("result") or {}, "result"),
        hide_index=True,
        width="stretch",
    )
    before, after = result["before"], result["after"]
    if not before.get("metadata_location") or not after.get("metadata_location"):
        return
    try:
        old = data.table_at(context.catalog, str(table.identifier), before["metadata_location"])
        new = data.table_at(context.catalog, str(table.identifier), after["metadata_location"])
        sample = request.get("sample_filter")
        rows = data.comparison(
            before["metadata_location"], after["metadata_location"], sample, old, new
        )
    except IcecoreError as error:
        show_error(error)
        return
    st.subheader("Before and after")
    st.dataframe(rows, hide_index=True, width="stretch")
    if after.get("snapshot_id") != before.get("snapshot_id") and after.get("snapshot_id"):
        st.page_link(
            "pages/2_History.py",
            label=f"The new snapshot {after['snapshot_id']} in History",
            icon=":material/history:",
            query_params={
                "catalog": context.catalog,
                "table": str(table.identifier),
                "snapshot": str(after["snapshot_id"]),
            },
        )


launched = st.session_state.setdefault(JOBS_KEY, {})
if table_key in launched:
    st.subheader("The job")

    @st.fragment(run_every=POLL_SECONDS)
    def follow() -> None:
        """Poll the job folder; stop polling (rerun the page) once the job is over."""
        job_id = launched[table_key]
        show_job(job_id)
        if jobs.status(job_id).state is not jobs.State.RUNNING and not st.session_state.get(
            f"mt_done_{job_id}"
        ):
            st.session_state[f"mt_done_{job_id}"] = True
            data.forget_table_lists()
            st.rerun()

    if st.session_state.get(f"mt_done_{launched[table_key]}"):
        show_job(launched[table_key])
    else:
        follow()

st.subheader("Recommendations")
try:
    recommendations = data.recommendations(table.metadata_location, table)
except IcecoreError as error:
    show_error(error)
    stop()
for rec in recommendations:
    with st.container(border=True):
        st.markdown(
            f"{views.STATUS_ICONS[rec.status]} **{escape_markdown(rec.title)}** · `{rec.job}` — "
            f"{escape_markdown(rec.reason)}"
        )
        left, right = st.columns(2)
        with left.expander("Evidence"):
            st.dataframe(
                views.key_value_rows(rec.evidence, "measure"),
                hide_index=True,
                width="stretch",
            )
        with right.expander("Estimated effect"):
            st.dataframe(
                views.key_value_rows(rec.estimate, "estimate"),
                hide_index=True,
                width="stretch",
            )

st.subheader("Run a job")
suggested = [r.job for r in recommendations if r.status == "warn"]
job_names = list(Job)
job = st.selectbox(
    "Job",
    job_names,
    index=job_names.index(suggested[0]) if suggested else 0,
    key="mt_job",
    format_func=lambda j: f"{j} (recommended)" if j in suggested else str(j),
)
options: list[str] = []
older_than_ms: int | None = None
retain_last: int | None = None
if job is Job.REWRITE_DATA_FILES:
    left, right = st.columns(2)
    strategy = left.selectbox("Strategy", ["binpack", "sort"], key="mt_strategy")
    where = right.text_input("Only rows matching (SQL filter, optional)", key="mt_filter")
    options += ["--strategy", strategy]
    if where.strip():
        options += ["--filter", where.strip()]
if job in (Job.EXPIRE_SNAPSHOTS, Job.REMOVE_ORPHAN_FILES):
    left, right = st.columns(2)
    default_days = 5 if job is Job.EXPIRE_SNAPSHOTS else 3
    days = left.number_input(
        "Older than (days ago)",
        min_value=0.0 if job is Job.EXPIRE_SNAPSHOTS else 1.0,
        value=float(default_days),
        step=1.0,
        key=f"mt_days_{job}",
    )
    cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(days=float(days))
    older_than_ms = int(cutoff.timestamp() * 1000)
    options += ["--older-than", cutoff.isoformat(timespec="seconds")]
    if job is Job.EXPIRE_SNAPSHOTS:
        keep = right.number_input(
            "Retain at least (snapshots per branch)", min_value=1, value=1, key="mt_retain"
        )
        retain_last = int(keep)
        options += ["--retain-last", str(retain_last)]

try:
    estimate = data.maintenance_estimate(
        table.metadata_location, job, older_than_ms, retain_last, table
    )
except IcecoreError as error:
    show_error(error)
    stop()
st.markdown(f"**Dry run** (from metadata, nothing written): {escape_markdown(estimate.reason)}")
st.dataframe(
    views.key_value_rows(estimate.estimate, "estimate"),
    hide_index=True,
    width="stretch",
)
argv = [str(job), table_key, *options, "--master", jobs.spark_master()]
st.code("python -m pipeline.maintenance " + " ".join(argv), language="bash")

running = table_key in launched and jobs.status(launched[table_key]).state is jobs.State.RUNNING
deletes = job in (Job.EXPIRE_SNAPSHOTS, Job.REMOVE_ORPHAN_FILES)
confirmed = st.checkbox(
    "I understand this "
    + ("deletes files for good" if deletes else "commits a new snapshot")
    + f" on {escape_markdown(table.identifier)}.",
    key="mt_confirm",
)
if st.button(
    "Run on Spark",
    key="mt_run",
    type="primary",
    disabled=not confirmed or running,
    help="A job is already running on this table." if running else None,
):
    examples = data.filter_examples(
        table.metadata_location,
        (s.snapshot_id if (s := table.metadata.current_snapshot()) else None),
        table,
    )
    launched[table_key] = jobs.launch(
        argv,
        job=str(job),
        table=table_key,
        before=table.metadata_location,
        sample_filter=examples[0] if examples else None,
    )
    st.session_state.pop("mt_confirm", None)
    st.rerun()

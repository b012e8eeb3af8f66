"""Maintenance: recommendations with evidence, a dry-run estimate, then the job run on Spark.

Every number before the run comes from icecore (metadata alone); the job itself is
``python -m pipeline.maintenance`` in the background, followed here through its job folder
(ui/jobs.py). Read-only mode hides the page's controls, and so does a role below owner on
the table (one caption says so).
"""

from __future__ import annotations

import datetime as dt
import time

import streamlit as st

from icecore import health, maintenance_policies
from icecore.access import Role
from icecore.config import config_path
from icecore.errors import IcecoreError
from icecore.maintenance import ESTIMATE_LABELS, Job, evolve_command
from ui import activity, data, evolve_form, identity, jobs, policy_runs, views
from ui.app import EVOLUTION, HISTORY
from ui.shell import allowed, bootstrap, escape_markdown, require_table, show_error, stop

POLL_SECONDS = 2.0
SPARK_ORPHAN_MIN_AGE_MS = 24 * 3600 * 1000  # remove_orphan_files refuses a younger cutoff
RUNNING_KEY = "mt_running"  # session state: table key -> ids of its jobs running at the last look

context = bootstrap("Maintenance")
table, _ = require_table(context)
table_key = f"{context.catalog}::{table.identifier}"

st.title(f"Maintain {escape_markdown(table.identifier)}")
if not allowed(context, Role.OWNER, "Running maintenance jobs"):
    stop()


def show_policies() -> None:
    """The table's maintenance policies, their sources, and its last jobs (ui/policy_runs.py)."""
    with st.expander("Maintenance by policy", icon=":material/schedule:"):
        st.caption(
            "`icecore maintain CATALOG` runs the jobs these policies make due ([[policies]] in "
            "icecore.toml; a table property `icecore.policy.<key>` overrides the file)."
        )
        try:
            rows = policy_runs.policy_rows(table)
        except IcecoreError as error:
            show_error(error)
            return
        if rows:
            st.dataframe(rows, hide_index=True)
        else:
            st.caption("No policy names this table: `icecore maintain` leaves it alone.")
        try:
            catalog = data.session_catalog(context.catalog)
            found = activity.visible_activity(catalog)
        except IcecoreError as error:
            show_error(error)
            return
        runs = policy_runs.last_runs(found.changes, str(table.identifier))
        st.markdown("**Last jobs** (from the audit log, newest first)")
        if runs:
            st.dataframe(runs, hide_index=True)
        else:
            st.caption("None recorded." if found.kept else "This catalog keeps no audit log.")
        if rows and st.button("What is due now", key="mt_policy_due"):
            plan = maintenance_policies.plan_table(
                data.open_catalog(context.catalog),
                table.identifier,
                maintenance_policies.load_policies(),
                str(config_path()),
                int(time.time() * 1000),
            )
            if plan.error:
                st.error(plan.error, icon=":material/error:")
            st.dataframe(
                [{"job": d["job"], "due": "yes", "why": d["reason"]} for d in plan.due]
                + [{"job": d["job"], "due": "no", "why": d["reason"]} for d in plan.not_due],
                hide_index=True,
            )


show_policies()
evolve_form.stop_unless_writable(context.read_only, table, "maintenance is hidden.")
st.caption(
    "What the table's health findings would take to fix, the Spark job that fixes each, and "
    "its effect estimated from metadata alone. A job runs on Spark "
    f"(master {escape_markdown(jobs.spark_master())}) in the background, after you confirm it; "
    "it belongs to the server: every session on this table sees it, follows its progress and "
    "can cancel it, and one job runs on a table at a time."
)


def show_progress(status: jobs.JobStatus) -> None:
    """Spark's stage and task progress as the job last wrote it, with a bar for the tasks."""
    progress = status.progress
    if progress is None:
        st.caption("Waiting for Spark to start…")
        return
    running = [
        s
        for j in progress.get("jobs", [])
        if j.get("status") == "RUNNING"
        for s in j.get("stages", [])
        if s.get("running")
    ]
    tasks = sum(int(s.get("tasks") or 0) for s in running)
    done = sum(int(s.get("completed") or 0) for s in running)
    line = escape_markdown(progress.get("line", ""))
    if tasks:
        st.progress(min(done / tasks, 1.0), text=line)
    else:
        st.caption(line)


def show_leftovers(status: jobs.JobStatus) -> None:
    """The files a cancelled or failed job wrote that no metadata reaches, and how to remove them.

    Listed with icecore's orphan check split at the job's start; ``remove_orphan_files``
    removes them, but only with a cutoff older than the files and at least a day ago (Spark
    refuses a younger one: a write in flight could lose its files).
    """
    if status.request.get("before") == table.metadata_location:
        st.caption("Nothing was committed: the table's metadata is still the one before the job.")
    try:
        found = data.job_leftovers(
            table.metadata_location, status.job_id, status.started_ms, table
        ).young
    except IcecoreError as error:
        show_error(error)
        return
    if not found:
        st.caption("It left no file under the table's location that no metadata reaches.")
        return
    size = sum(f.size for f in found)
    newest = max((f.modified_ms or status.started_ms) for f in found)
    st.warning(
        f"It left {len(found):,} files ({health.format_bytes(size)}) under the table's location "
        "that no metadata of the table reaches; they take space until remove_orphan_files "
        "deletes them.",
        icon=":material/folder_delete:",
    )
    with st.expander(f"The {len(found):,} files it left"):
        st.dataframe(
            [
                {
                    "file": f.path,
                    "size": health.format_bytes(f.size),
                    "written": views.format_ms(f.modified_ms),
                }
                if f.modified_ms is not None
                else {"file": f.path, "size": health.format_bytes(f.size), "written": ""}
                for f in found
            ],
            hide_index=True,
            width="stretch",
        )
    # Any cutoff after the newest leftover covers them all; Spark wants it a day ago or older.
    cutoff_ms = newest + 1000
    usable_ms = cutoff_ms + SPARK_ORPHAN_MIN_AGE_MS
    now_ms = int(time.time() * 1000)
    cutoff = dt.datetime.fromtimestamp(cutoff_ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")
    command = (
        f"python -m pipeline.maintenance remove_orphan_files {table_key} --older-than {cutoff}"
    )
    if now_ms < usable_ms:
        st.markdown(
            "To remove them, run the orphan job **remove_orphan_files** with a cutoff after the "
            f"newest of them ({escape_markdown(views.format_ms(newest))}). Spark refuses a "
            "cutoff within the last 24 hours (a write in flight could lose its files), so it "
            "can run from "
            f"{escape_markdown(views.format_ms(usable_ms))} on:"
        )
    else:
        st.markdown(
            "The orphan job **remove_orphan_files** with a cutoff after the newest of them "
            f"({escape_markdown(views.format_ms(newest))}) removes them:"
        )
    st.code(command, language="bash")
    if now_ms >= usable_ms and st.button(
        "Prepare the orphan job below", key=f"mt_orphans_{status.job_id}"
    ):
        days = (now_ms - cutoff_ms) / SPARK_ORPHAN_MIN_AGE_MS
        st.session_state["mt_job"] = Job.REMOVE_ORPHAN_FILES
        st.session_state[f"mt_days_{Job.REMOVE_ORPHAN_FILES}"] = max(1.0, int(days * 100) / 100)
        st.rerun()


def show_job(status: jobs.JobStatus, latest: bool) -> None:
    """A job's state, progress, log tail and, once over, its result or what it left behind.

    ``latest``: the table's most recent ended job, shown in full (older ones in one line).
    """
    request = status.request
    job_id = status.job_id
    st.markdown(
        f"**{escape_markdown(request.get('job', ''))}** · job `{job_id}` · {status.state} · "
        f"started {escape_markdown(views.format_ms(status.started_ms))}"
    )
    if status.cancelling:
        st.caption("Cancelling: Spark is stopping; the files it left are listed once it has.")
    elif status.state is jobs.State.RUNNING:
        show_progress(status)
        if st.button("Cancel the job", key=f"mt_cancel_{job_id}"):
            try:
                jobs.cancel(job_id, table=table_key)
            except IcecoreError as error:
                show_error(error)
            else:
                st.rerun()
    if not latest:
        if status.error is not None:
            st.caption(escape_markdown(status.error))
        return
    with st.expander("Log", expanded=status.state is not jobs.State.RUNNING):
        st.code("\n".join(status.log_tail) or "(starting…)", language=None)
    if status.state is jobs.State.CANCELLED:
        st.info(escape_markdown(status.error or "Cancelled."), icon=":material/cancel:")
    elif status.error is not None:
        st.error(escape_markdown(status.error), icon=":material/error:")
    if status.state in (jobs.State.CANCELLED, jobs.State.FAILED, jobs.State.LOST):
        show_leftovers(status)
    if status.result is not None:
        show_result(status)


def show_result(status: jobs.JobStatus) -> None:
    """A succeeded job's result and a before/after comparison."""
    request = status.request
    result = status.result or {}
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
            HISTORY.file,
            label=f"The new snapshot {after['snapshot_id']} in History",
            icon=":material/history:",
            query_params={
                "catalog": context.catalog,
                "table": str(table.identifier),
                "snapshot": str(after["snapshot_id"]),
            },
        )


@st.fragment(run_every=POLL_SECONDS)
def follow() -> None:
    """The table's jobs from the jobs folder, polled: a start or an end anywhere reruns the page.

    Any session's start (the Run button's state) or end (recommendations, the table's
    version) changes more than this fragment, so the whole page reruns once then.
    """
    listed = jobs.table_jobs(table_key)
    now_running = sorted(j.job_id for j in listed if not j.over)
    seen = st.session_state.setdefault(RUNNING_KEY, {})
    before = seen.get(table_key)
    seen[table_key] = now_running
    if before is not None and before != now_running:
        data.forget_table_lists()
        st.rerun()
    if not listed:
        return
    st.subheader("Jobs on this table")
    latest_ended = next((j.job_id for j in listed if j.over), None)
    for status in listed:
        with st.container(border=True):
            show_job(status, latest=status.over is False or status.job_id == latest_ended)


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
        if rec.force_reason:
            st.warning(escape_markdown(rec.force_reason), icon=":material/warning:")
        if rec.spec_changes:
            st.markdown(
                "**First, a coarser partition spec**: preview it with this command (nothing is "
                "committed), commit it without `--dry-run` or on the Evolution page, and only "
                "then compact."
            )
            st.code(evolve_command(table_key, rec.spec_changes), language="bash")
            st.page_link(
                EVOLUTION.file,
                label="Change the partition spec on the Evolution page",
                icon=":material/schema:",
                query_params={"catalog": context.catalog, "table": str(table.identifier)},
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
                views.key_value_rows(rec.estimate, "estimate", labels=ESTIMATE_LABELS),
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
    views.key_value_rows(estimate.estimate, "estimate", labels=ESTIMATE_LABELS),
    hide_index=True,
    width="stretch",
)
forced = False
if estimate.force_reason:
    st.warning(escape_markdown(estimate.force_reason), icon=":material/warning:")
    forced = st.checkbox(
        "Run it anyway: I accept that the table will have more files after it than before.",
        key="mt_force",
    )
    if forced:
        options.append("--force")
argv = [str(job), table_key, *options, "--master", jobs.spark_master()]
st.code("python -m pipeline.maintenance " + " ".join(argv), language="bash")

running = jobs.running_job(table_key)
if running is not None:
    st.info(
        f"{escape_markdown(running.request.get('job', 'A job'))} (job {running.job_id}) is "
        "running on this table; one job runs on a table at a time, so wait for it to end or "
        "cancel it above.",
        icon=":material/hourglass_top:",
    )
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
    disabled=not confirmed or running is not None or bool(estimate.force_reason and not forced),
    help="A job is already running on this table."
    if running is not None
    else (
        "The estimate says this job makes the table worse; tick the box above to run it anyway."
        if estimate.force_reason and not forced
        else None
    ),
):
    examples = data.filter_examples(
        table.metadata_location,
        (s.snapshot_id if (s := table.metadata.current_snapshot()) else None),
        table,
    )
    try:
        jobs.launch_maintenance(
            identity.guarded(data.open_catalog(context.catalog), context.catalog),
            table.identifier,
            argv,
            job=str(job),
            table=table_key,
            before=table.metadata_location,
            sample_filter=examples[0] if examples else None,
        )
    except IcecoreError as refusal:  # not an owner, a job started meanwhile, no audit log
        show_error(refusal)
        stop()
    st.session_state.pop("mt_confirm", None)
    st.rerun()

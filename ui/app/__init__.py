"""The explorer's Streamlit scripts, shipped inside the package, and the one list of its pages.

``Tables.py`` is the main script and ``pages/`` holds the others (Streamlit's pages directory,
found next to the main script): they live here, not at the repository's root, so an installed
wheel carries them and ``icecore app`` serves them from wherever pip put them. The repository
root keeps ``app.py`` (a link to ``Tables.py``) and ``pages`` (a link to ``pages/``) so that
``streamlit run app.py`` still works there: Streamlit decides whether an app has a pages
directory by looking next to the main script's path as given, then reads the pages next to
the path it resolves to.

:data:`PAGES` is read by ``Tables.py`` (its tour of the pages), by the pages that link to
each other, and by the tests: a page renamed or added is one edit here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent
"""The folder of the scripts Streamlit runs (and of its ``.streamlit/config.toml``)."""

MAIN_SCRIPT = APP_DIR / "Tables.py"
"""The script ``streamlit run`` takes; its file name is the landing page's label: "Tables"."""


@dataclass(frozen=True)
class Page:
    """One page of the explorer besides the landing page.

    ``file`` is relative to the main script's folder, the form ``st.page_link``,
    ``st.switch_page`` and ``AppTest.switch_page`` take.
    """

    file: str
    title: str
    description: str

    @property
    def path(self) -> Path:
        """The page's script on disk."""
        return APP_DIR / self.file


OVERVIEW = Page(
    "pages/1_Overview.py", "Overview", "format, schema tree, specs, totals and health findings"
)
HISTORY = Page(
    "pages/2_History.py", "History", "snapshots on branch and tag lanes, the metadata log"
)
METADATA_TREE = Page(
    "pages/3_Metadata_tree.py", "Metadata tree", "snapshot → manifests → files, to scale"
)
SCAN_PREVIEW = Page(
    "pages/4_Scan_preview.py", "Scan preview", "a filter, what it prunes and why, the rows"
)
TIME_TRAVEL = Page(
    "pages/5_Time_travel.py", "Time travel", "two points in time and what changed between"
)
EVOLUTION = Page(
    "pages/6_Evolution.py", "Evolution", "schema, partition and sort changes: dry run, commit"
)
SQL = Page("pages/7_SQL.py", "SQL", "DuckDB over metadata tables and scan rows, downloads")
MAINTENANCE = Page(
    "pages/8_Maintenance.py", "Maintenance", "recommendations, estimates, jobs on Spark"
)
ACTIVITY = Page(
    "pages/9_Activity.py", "Activity", "the audit log: who changed which table, how, the result"
)

VIEWS = Page(
    "pages/10_Views.py", "Views", "a catalog's views: SQL per dialect, versions, what they read"
)

WORKLOAD = Page(
    "pages/11_Workload.py",
    "Workload",
    "what engines ask of a table: filters, pruning, planning time, commits",
)

PAGES: tuple[Page, ...] = (
    OVERVIEW,
    HISTORY,
    METADATA_TREE,
    SCAN_PREVIEW,
    TIME_TRAVEL,
    EVOLUTION,
    SQL,
    MAINTENANCE,
    ACTIVITY,
    VIEWS,
    WORKLOAD,
)
"""Every page in the sidebar's order (Streamlit orders the files by their number)."""

"""The one list of pages (``ui.app.PAGES``) is the pages there are, and both main scripts find them.

The package's ``ui/app/Tables.py`` (``icecore app``) and the repository's ``app.py``
(``streamlit run app.py``, ``make run``, the Docker image).

No Spark here: the landing page runs on an empty warehouse folder, which lists no table but
still draws its tour of the pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.helpers import REPO, TIMEOUT, no_problems
from ui import app


def test_the_list_names_every_page_file_once() -> None:
    on_disk = sorted(f"pages/{p.name}" for p in (app.APP_DIR / "pages").glob("*.py"))
    assert sorted(page.file for page in app.PAGES) == on_disk
    assert len({page.title for page in app.PAGES}) == len(app.PAGES)


def test_each_page_calls_itself_by_its_title_in_the_list() -> None:
    for page in app.PAGES:
        titles = re.findall(r'\bbootstrap\("([^"]+)"\)', page.path.read_text(encoding="utf-8"))
        assert titles == [page.title], page.file


def test_the_repository_links_lead_into_the_package() -> None:
    assert (REPO / "app.py").resolve() == app.MAIN_SCRIPT
    assert (REPO / "pages").resolve() == app.APP_DIR / "pages"
    config = REPO / ".streamlit/config.toml"
    assert config.resolve() == app.APP_DIR / ".streamlit/config.toml"


@pytest.mark.parametrize("main", [app.MAIN_SCRIPT, REPO / "app.py"], ids=["package", "repo"])
def test_the_landing_page_links_every_page_and_each_link_opens(
    main: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path))
    at = AppTest.from_file(str(main), default_timeout=TIMEOUT)
    at.run()
    no_problems(at)
    # st.page_link raises for a file that is no registered page: each link found its page.
    links = at.get("page_link")
    assert len(links) == len(app.PAGES)
    for link, page in zip(links, app.PAGES, strict=True):
        assert link.proto.label.startswith(f"**{page.title}**")
        assert link.proto.page_script_hash
    at.switch_page(app.HISTORY.file).run()
    no_problems(at)
    # The History page ran (it asks for a table), not the landing page again.
    assert not at.get("page_link") and [s.value for s in at.subheader] == []
    assert [i.value for i in at.info] == ["Choose a table in the sidebar."]

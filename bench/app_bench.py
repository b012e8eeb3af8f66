"""Drive the app's pages in chromium and time them (issue 20, Deliver 4; bench/README.md).

Usage::

    python -m bench.app_bench --catalog /tmp/benchwh/hadoop --table bench.files_1000000
        [--filter SQL] [--pages Overview,History,...] [--timeout 600]
        [--record bench/app_bench.results.md] [--json FILE]

It starts ``streamlit run app.py`` itself (headless, a free port on 127.0.0.1) with
``ICECORE_CATALOG`` set to ``--catalog``, ``ICECORE_READ_ONLY=1`` and a fresh, empty
``ICECORE_CACHE_DIR``, opens the landing page in Debian's chromium (``/usr/bin/chromium``
through Playwright; never a downloaded browser) with the table (and the Scan preview's filter)
in the link, as a shared link would, and then walks every page from the sidebar:

- first visit: each page once, in the sidebar's order;
- second visit: the same walk again in the same browser session;
- second user: a new browser context (a new Streamlit session, the server's caches shared).

A visit is timed from the click (or the navigation, for the landing page) until the page has
finished running: its own title is shown and Streamlit's status widget is gone (the widget
takes 0.2 s to fade, which every time includes). While it runs, the page is watched for
progress (``stProgress`` bars, ``stSpinner`` texts, ``st.status`` spinners) whose texts are
kept, and for error boxes (``stException``, ``st.error``), which make the exit code 1. The
server's memory is sampled every 0.2 s as the resident size of the streamlit process and all
its children (the planner's decode workers are children), and ``VmHWM`` (the peak of the
streamlit process itself) is read after each visit.

The last stdout line is JSON; ``--record`` appends the Markdown report (date, machine, load,
commit) to a results file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench._harness import peak_mib, publish
from ui import app

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
LANDING = "landing"
PAGES = tuple(page.title for page in app.PAGES)
"""The sidebar's pages, in its order (the one list, ``ui.app.PAGES``)."""

SAMPLE_SECONDS = 0.2
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

# Watches the page for progress and errors while it runs; reset before each visit.
OBSERVER = """
(() => {
  const bench = {progress: false, spinner: false, status: false, texts: [], errors: []};
  bench.reset = () => {
    bench.progress = false; bench.spinner = false; bench.status = false;
    bench.texts = []; bench.errors = [];
  };
  const keep = (text) => {
    text = (text || '').trim().slice(0, 200);
    if (text && !bench.texts.includes(text) && bench.texts.length < 20) bench.texts.push(text);
  };
  const look = () => {
    for (const el of document.querySelectorAll('[data-testid=stProgress]')) {
      bench.progress = true; keep(el.innerText);
    }
    for (const el of document.querySelectorAll('[data-testid=stSpinner]')) {
      bench.spinner = true; keep(el.innerText);
    }
    for (const el of document.querySelectorAll('[data-testid=stExpanderIconSpinner]')) {
      bench.status = true;
      const box = el.closest('[data-testid=stExpander]');
      keep(box ? box.innerText.split('\\n')[0] : '');
    }
  };
  window.__bench = bench;
  const start = () => {
    new MutationObserver(look).observe(document.body, {childList: true, subtree: true,
      characterData: true});
  };
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})();
"""

# True once the page shows its own title and Streamlit's run is over.
DONE = """
([title, extra]) => {
  if (document.querySelector('[data-testid=stStatusWidget]')) return false;
  const re = new RegExp(title);
  const heads = [...document.querySelectorAll('[data-testid=stMain] h1')];
  if (!heads.some((h) => re.test(h.textContent.trim()))) return false;
  if (!extra) return true;
  // The page's last element, or an error box in its place (the page ends there too).
  return !!document.querySelector(
    extra + ', [data-testid=stException], [data-testid=stAlertContentError]');
}
"""

ERRORS = """
() => [...document.querySelectorAll(
  '[data-testid=stException], [data-testid=stAlertContentError]')]
  .map((el) => el.innerText.trim().slice(0, 300))
"""


class AppBenchError(Exception):
    """The bench could not run (no chromium, the app did not start); one sentence."""


@dataclass
class Visit:
    """One page visit: how long it took and what the server held meanwhile."""

    seconds: float | None
    peak_rss_mib: float
    vmhwm_mib: float
    progress: bool
    texts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class PageResult:
    """A page's three visits."""

    page: str
    first: Visit | None = None
    second: Visit | None = None
    second_user: Visit | None = None


# ------------------------------------------------------------------------------- memory


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc's parent links)."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _rss_mib(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_rss_mib(pid: int) -> float:
    """Resident MiB of ``pid`` and all its descendants now."""
    return _rss_mib(pid) + sum(_rss_mib(child) for child in _children(pid))


class MemorySampler:
    """Samples the server's tree RSS in a thread; :meth:`window` gives a visit's peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self.overall = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            now = tree_rss_mib(self.pid)
            with self._lock:
                self.peak = max(self.peak, now)
                self.overall = max(self.overall, now)

    def start(self) -> None:
        """Start sampling."""
        self._thread.start()

    def window(self) -> float:
        """The peak since the last call (sampling once more now), and start a new window."""
        now = tree_rss_mib(self.pid)
        with self._lock:
            peak, self.peak = max(self.peak, now), 0.0
            self.overall = max(self.overall, now)
        return round(peak, 1)

    def stop(self) -> None:
        """Stop sampling (:meth:`window` still samples once more when called)."""
        self._stop.set()
        self._thread.join(timeout=5)


# ------------------------------------------------------------------------------- server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def streamlit_app(
    env: Mapping[str, str], log_path: Path, start_timeout: float = 90
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``streamlit run app.py`` on 127.0.0.1 and a free port with exactly ``env``; its URL.

    The one way the bench and the browser tests start the app; stopped when the block ends.
    """
    port = _free_port()
    with log_path.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.address=127.0.0.1",
                f"--server.port={port}",
                "--server.headless=true",
                "--browser.gatherUsageStats=false",
                "--server.fileWatcherType=none",
            ],
            cwd=REPO,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if process.poll() is not None:
                    raise AppBenchError(f"streamlit exited at start; see {log_path}.")
                if time.monotonic() > deadline:
                    raise AppBenchError(f"streamlit did not start in {start_timeout:.0f} s.")
                time.sleep(0.3)
            yield base, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def streamlit_server(
    catalog: str, cache_dir: Path, log_path: Path, start_timeout: float = 90
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The app read-only on ``catalog``, with an empty cache (:func:`streamlit_app`)."""
    env = {
        **os.environ,
        "ICECORE_CATALOG": catalog,
        "ICECORE_READ_ONLY": "1",
        "ICECORE_CACHE_DIR": str(cache_dir),
    }
    with streamlit_app(env, log_path, start_timeout) as started:
        yield started


# ------------------------------------------------------------------------------- pages


def title_pattern(page: str, table: str) -> str:
    """A regular expression for the page's title (its ``h1``), as ``pages/*.py`` write it."""
    t = re.escape(table)
    return {
        LANDING: r"^Icecore$",
        "Overview": rf"^{t}$",
        "History": rf"^History of {t}$",
        "Metadata tree": rf"^Metadata tree of {t}$",
        "Scan preview": rf"^Scan preview of {t}$",
        "Time travel": rf"^Time travel in {t}$",
        "Evolution": rf"^Evolve {t}$",
        "SQL": rf"^SQL on {t}$",
        "Maintenance": rf"^Maintain {t}$",
    }[page]


EXTRA = {"SQL": "[data-testid=stMain] [data-testid=stDataFrame]"}
"""A page-specific element that shows only when the page's work is done."""


def visit(
    tab: Any,
    sampler: MemorySampler,
    server_pid: int,
    page: str,
    table: str,
    go: Callable[[], None],
    timeout: float,
) -> Visit:
    """Run ``go`` (a click or a navigation) and time it until ``page`` has finished."""
    tab.evaluate("() => window.__bench && window.__bench.reset()")
    sampler.window()
    started = time.perf_counter()
    seconds: float | None
    errors: list[str] = []
    try:
        done = [title_pattern(page, table), EXTRA.get(page)]
        go()
        tab.wait_for_function(DONE, arg=done, timeout=timeout * 1000, polling=50)
        seconds = round(time.perf_counter() - started, 2)
        # Another run may follow at once (a rerun the page asks for): wait for it too.
        time.sleep(0.5)
        if not tab.evaluate(DONE, done):
            tab.wait_for_function(DONE, arg=done, timeout=timeout * 1000, polling=50)
            seconds = round(time.perf_counter() - started, 2)
    except Exception as e:  # Playwright's TimeoutError and friends: a finding, not a crash
        seconds = None
        shot = Path(tempfile.gettempdir()) / f"app-bench-{page.replace(' ', '_')}-timeout.png"
        try:
            tab.screenshot(path=str(shot), full_page=True)
        except Exception:  # noqa: BLE001 - the screenshot is only a hint
            shot = Path("(no screenshot)")
        errors.append(f"not finished in {timeout:.0f} s ({type(e).__name__}); see {shot}")
    seen = tab.evaluate("() => window.__bench || {}")
    errors += tab.evaluate(ERRORS)
    return Visit(
        seconds=seconds,
        peak_rss_mib=sampler.window(),
        vmhwm_mib=round(peak_mib(server_pid), 1),
        progress=bool(seen.get("progress") or seen.get("spinner") or seen.get("status")),
        texts=list(seen.get("texts", [])),
        errors=errors,
    )


def walk(
    tab: Any,
    sampler: MemorySampler,
    server_pid: int,
    landing_url: str,
    table: str,
    pages: list[str],
    timeout: float,
    say: Callable[[str], None],
) -> dict[str, Visit]:
    """The landing page by URL, then every page from the sidebar."""
    results: dict[str, Visit] = {}
    results[LANDING] = visit(
        tab, sampler, server_pid, LANDING, table, lambda: tab.goto(landing_url), timeout
    )
    say(f"  {LANDING}: {results[LANDING].seconds} s")
    for page in pages:

        def click(name: str = page) -> None:
            nav = tab.get_by_test_id("stSidebarNav")
            nav.get_by_role("link", name=name, exact=True).click()

        results[page] = visit(tab, sampler, server_pid, page, table, click, timeout)
        v = results[page]
        say(
            f"  {page}: {v.seconds} s, peak {v.peak_rss_mib:.0f} MiB"
            + (f", progress: {v.texts[:2]}" if v.progress else "")
            + (f", ERRORS: {v.errors}" if v.errors else "")
        )
    return results


# ------------------------------------------------------------------------------- report


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def _machine() -> str:
    mem = 0.0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) / 2**20
    return f"{os.cpu_count()} cores, {mem:.0f} GiB, {platform.python_version()}"


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "app.py", "pages", "ui", "icecore"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()[:80] + (" (app or icecore modified)" if dirty.stdout.strip() else "")


def _secs(v: Visit | None) -> str:
    if v is None:
        return "–"
    return "timeout" if v.seconds is None else f"{v.seconds:.1f}"


def markdown(report: dict[str, Any], results: list[PageResult]) -> str:
    """The run as a Markdown section: its conditions, then one row per page."""
    lines = [
        f"### {report['table']} ({report['date']})",
        "",
        f"- catalog `{report['catalog']}`, filter `{report['filter'] or '-'}`; "
        f"commit {report['commit']}",
        f"- machine: {report['machine']}; load (1/5/15 min) before {report['load_before']}, "
        f"after {report['load_after']}",
        f"- server peak (streamlit + children, sampled): {report['server_peak_rss_mib']:.0f} MiB;"
        f" streamlit VmHWM {report['server_vmhwm_mib']:.0f} MiB; "
        f"total {report['seconds']:.0f} s",
        "",
        "| page | first visit (s) | second visit (s) | second user (s) | peak MiB first / "
        "second / 2nd user | VmHWM MiB | progress on first visit | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        visits = (r.first, r.second, r.second_user)
        peaks = " / ".join("–" if v is None else f"{v.peak_rss_mib:.0f}" for v in visits)
        hwm = max((v.vmhwm_mib for v in visits if v is not None), default=0.0)
        first = r.first
        if first is None or not first.progress:
            progress = "no"
        else:
            progress = "yes: " + "; ".join(
                t.replace("|", "/").replace("\n", " ") for t in first.texts[:2]
            )
        errors = sum(len(v.errors) for v in visits if v is not None)
        lines.append(
            f"| {r.page} | {_secs(r.first)} | {_secs(r.second)} | {_secs(r.second_user)} | "
            f"{peaks} | {hwm:.0f} | {progress} | {errors or ''} |"
        )
    errs = [
        f"- {r.page} ({kind}): " + " / ".join(e.replace("\n", " ")[:200] for e in v.errors)
        for r in results
        for kind, v in (("first", r.first), ("second", r.second), ("2nd user", r.second_user))
        if v is not None and v.errors
    ]
    if errs:
        lines += ["", "Errors shown:", "", *errs]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- main


def run(
    catalog: str,
    table: str,
    *,
    filter_text: str | None = None,
    pages: list[str] | None = None,
    timeout: float = 600,
    second_user: bool = True,
    say: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], list[PageResult]]:
    """Walk the pages three times (first, second, second user); see the module docstring."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    if not CHROMIUM.exists():
        raise AppBenchError("Debian's chromium is missing; install it (apt-get install chromium).")
    from playwright.sync_api import sync_playwright

    pages = list(pages or PAGES)
    params = {"catalog": catalog, "table": table}
    if filter_text:
        params["filter"] = filter_text
    work = Path(tempfile.mkdtemp(prefix="app-bench-"))
    cache_dir = work / "cache"
    cache_dir.mkdir()
    log_path = work / "streamlit.log"
    load_before = _load()
    started = time.perf_counter()
    results = [PageResult(LANDING), *(PageResult(p) for p in pages)]
    by_name = {r.page: r for r in results}
    try:
        with streamlit_server(catalog, cache_dir, log_path) as (base, process):
            sampler = MemorySampler(process.pid)
            sampler.start()
            landing = f"{base}/?{urlencode(params)}"
            try:
                with sync_playwright() as playwright:
                    browser = playwright.chromium.launch(
                        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
                    )
                    try:
                        walks = [("first", "first"), ("second", "second")]
                        if second_user:
                            walks.append(("second_user", "second user"))
                        context = None
                        for attr, label in walks:
                            if attr != "second":
                                context = browser.new_context(
                                    viewport={"width": 1400, "height": 1600}
                                )
                                context.add_init_script(OBSERVER)
                                tab = context.new_page()
                            say(f"{label} walk of {table}:")
                            found = walk(
                                tab, sampler, process.pid, landing, table, pages, timeout, say
                            )
                            for name, v in found.items():
                                setattr(by_name[name], attr, v)
                    finally:
                        browser.close()
            finally:
                sampler.stop()
            overall = sampler.overall
            hwm = peak_mib(process.pid)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    report: dict[str, Any] = {
        "table": table,
        "catalog": catalog,
        "filter": filter_text,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _machine(),
        "commit": _commit(),
        "load_before": load_before,
        "load_after": _load(),
        "server_peak_rss_mib": round(overall, 1),
        "server_vmhwm_mib": round(hwm, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "server_log": str(log_path),
        "pages": [asdict(r) for r in results],
    }
    return report, results


MISSING_FILE = re.compile(r"File \S+ does not exist\.")
"""The error of a page that reads rows on a metadata-only bench table (no data file exists)."""


def failed(results: list[PageResult], missing_files_ok: bool = False) -> bool:
    """Whether any visit showed an error box or did not finish.

    Args:
        results: the walks' visits.
        missing_files_ok: an error box saying a data file does not exist is expected on the
            metadata-only bench tables (the Scan preview and SQL read rows); do not count it.
    """
    return any(
        v is not None
        and (
            v.seconds is None
            or any(not (missing_files_ok and MISSING_FILE.search(e)) for e in v.errors)
        )
        for r in results
        for v in (r.first, r.second, r.second_user)
    )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.app_bench", description="Time the app's pages in chromium."
    )
    parser.add_argument("--catalog", required=True, help="ICECORE_CATALOG for the app")
    parser.add_argument("--table", required=True, help="namespace.table in that catalog")
    parser.add_argument("--filter", help="the Scan preview's filter (put in the link)")
    parser.add_argument("--pages", help=f"comma-separated subset of: {', '.join(PAGES)}")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per visit")
    parser.add_argument("--no-second-user", action="store_true", help="skip the second user")
    parser.add_argument(
        "--missing-files-ok",
        action="store_true",
        help="exit 0 when the only errors shown are data files that do not exist "
        "(expected on the metadata-only bench tables)",
    )
    parser.add_argument("--record", help="append the Markdown report to this file")
    parser.add_argument("--json", help="write the JSON report to this file too")
    args = parser.parse_args(argv)
    pages = [p.strip() for p in args.pages.split(",")] if args.pages else list(PAGES)
    unknown = [p for p in pages if p not in PAGES]
    if unknown:
        parser.error(f"unknown pages {unknown}; choose from {', '.join(PAGES)}")
    try:
        report, results = run(
            args.catalog,
            args.table,
            filter_text=args.filter,
            pages=pages,
            timeout=args.timeout,
            second_user=not args.no_second_user,
        )
    except AppBenchError as e:
        print(str(e), file=sys.stderr)
        return 2
    publish(markdown(report, results), args.record)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))
    return 1 if failed(results, args.missing_files_ok) else 0


if __name__ == "__main__":
    raise SystemExit(main())

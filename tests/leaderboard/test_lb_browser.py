"""The published page in headless Chromium: the rendered table is read back from the DOM.

The page sorts on load from its URL hash (`#sort=TABLE:KEY&dir=...`), through the same code
as a header click, so `--dump-dom` shows the table as a reader would after sorting.
Skipped only where no Chromium is installed (`.ci/run` installs Debian's `chromium`).
"""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from factrl.leaderboard import publish, record_run
from factrl.leaderboard.testing import make_run_dir

from .conftest import fill_paper_grid
from .test_lb_publish import NASTY

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
                 if p and Path(p).is_file()), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")


class TableReader(HTMLParser):
    """Rows of <table id=...>'s tbody as lists of (text, data-value), plus header keys."""

    def __init__(self, table_id: str):
        super().__init__()
        self.table_id, self.inside, self.in_body = table_id, False, False
        self.rows: list[list[tuple[str, str | None]]] = []
        self.keys: list[str] = []
        self.cell: list[str] | None = None
        self.value: str | None = None
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "table" and attrs.get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "th":
            self.keys.append(attrs.get("data-key"))
        elif self.inside and tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.rows.append([])
        elif self.in_body and tag == "td":
            self.cell, self.value = [], attrs.get("data-value")

    def handle_endtag(self, tag):
        if self.in_body and tag == "td" and self.cell is not None:
            self.rows[-1].append(("".join(self.cell).strip(), self.value))
            self.cell = None
        elif tag == "table" and self.inside:
            self.inside = self.in_body = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def rendered(page: Path, fragment: str, tmp_path: Path, table: str = "t-accuracy") -> TableReader:
    """The DOM after Chromium loaded the page and ran its scripts."""
    profile = tmp_path / f"profile-{abs(hash(fragment))}"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri() + fragment]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    reader = TableReader(table)
    reader.feed(done.stdout)
    return reader


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    store = root / "lb.sqlite"
    fill_paper_grid(root / "runs", store, popularity=False)
    record_run(make_run_dir(root / "runs", method="raw", model=NASTY, scores={"triviaqa": 0.5}), store)
    record_run(make_run_dir(root / "runs", method="fspo", model=NASTY, scores={"triviaqa": 0.7}), store)
    publish(store, "1", root / "site")
    return root / "site" / "index.html"


def test_rendered_table_has_every_line_and_sorts_by_a_column(site, tmp_path):
    plain = rendered(site, "", tmp_path)
    assert len(plain.rows) == 8  # 2 models x (Raw, FSPO, CorVer) + the odd model's 2 lines
    keys = plain.keys
    assert keys[:2] == ["model", "method"] and "macro" in keys
    macro = keys.index("macro")
    by_macro = rendered(site, "#sort=accuracy:macro&dir=desc", tmp_path)
    values = [float(row[macro][1]) for row in by_macro.rows if row[macro][1]]
    assert values == sorted(values, reverse=True) and len(values) == 6
    assert [row[macro][1] for row in by_macro.rows][-2:] == ["", ""]  # no macro: always last
    assert by_macro.rows[0][1][0] == "CorVer (ours)" and by_macro.rows[0][0][0] == "qwen3-8b"
    ascending = rendered(site, "#sort=accuracy:macro&dir=asc", tmp_path)
    assert [float(r[macro][1]) for r in ascending.rows if r[macro][1]] == sorted(values)
    by_method = rendered(site, "#sort=method", tmp_path)
    methods = [row[1][0] for row in by_method.rows]
    assert methods == sorted(methods, key=str.lower)
    assert len(by_method.rows) == 8


def test_special_characters_render_as_text_in_the_browser(site, tmp_path):
    page = rendered(site, "", tmp_path)
    assert page.scripts == 1  # no injected <script> became an element
    models = {row[0][0] for row in page.rows}
    assert NASTY in models  # the name reads back exactly, as text


def test_every_line_links_to_provenance_sections(site, tmp_path):
    html = site.read_text()
    page = rendered(site, "", tmp_path)
    for row in page.rows:
        assert row[-1][0] not in ("", "—")  # the provenance cell lists set links
    for anchor in set(part.split('"')[0] for part in html.split('href="#row-')[1:]):
        assert f'id="row-{anchor}"' in html
        assert (site.parent / "rows" / f"{anchor}.json").is_file()
    time_table = rendered(site, "#sort=time:ratio&dir=asc", tmp_path, table="t-time")
    ratio = time_table.keys.index("ratio")
    assert [row[ratio][0] for row in time_table.rows] == ["1.00×", "5.54×", "—"]


def test_clicking_a_header_sorts_and_a_second_click_reverses(site, tmp_path):
    from .cdp import Browser

    browser = Browser(CHROMIUM, tmp_path / "cdp-profile")
    try:
        browser.open(site.resolve().as_uri())
        read = ("Array.from(document.querySelectorAll('#t-accuracy tbody tr')).map(r => "
                "[r.cells[1].textContent, r.querySelector('td:nth-last-child(2)').getAttribute('data-value')])")
        before = browser.js(read)
        assert len(before) == 8
        browser.click("#t-accuracy th[data-key=macro]")
        after = browser.js(read)
        values = [float(v) for _, v in after if v]
        assert values == sorted(values, reverse=True) and [v for _, v in after][-2:] == ["", ""]
        assert browser.js("document.querySelector('#t-accuracy th[data-key=macro]').getAttribute('aria-sort')") \
            == "descending"
        browser.click("#t-accuracy th[data-key=macro]")
        again = [float(v) for _, v in browser.js(read) if v]
        assert again == sorted(values)
        browser.click("#t-accuracy th[data-key=method]")
        methods = [m for m, _ in browser.js(read)]
        assert methods == sorted(methods, key=str.lower) and len(methods) == 8
    finally:
        browser.close()

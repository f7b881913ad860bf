"""The published page in headless Chromium: the rendered table is read back from the DOM.

The page sorts on load from its URL hash (`#sort=TABLE:KEY&dir=...`), through the same code
as a header click, so `--dump-dom` shows the table as a reader would after sorting. Clicks,
colours and layout (no horizontal overflow at 1400 px) are checked through the DevTools
protocol (cdp.py). Skipped only where no Chromium is installed (`.ci/run` installs Debian's
`chromium`).
"""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from factrl.leaderboard import publish, record_run
from factrl.leaderboard.testing import make_run_dir

from .conftest import fill_paper_grid, phases_for
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
    publish(store, "1", root / "site", {"focus_method": "corver"})  # the paper's view: CorVer as focus
    return root / "site" / "index.html"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """CorVer ahead on one set, behind on another, level on a third model; FSPO timed too."""
    root = tmp_path_factory.mktemp("mixed")
    store = root / "lb.sqlite"
    for method, model, scores, seconds in (
            ("raw", "m", {"triviaqa": 0.5, "nq_open": 0.3}, None),
            ("fspo", "m", {"triviaqa": 0.7, "nq_open": 0.2}, 7200),
            ("corver", "m", {"triviaqa": 0.6, "nq_open": 0.4}, 3600),
            ("raw", "n", {"triviaqa": 0.5, "nq_open": 0.5}, None),
            ("corver", "n", {"triviaqa": 0.5, "nq_open": 0.5}, 1800)):
        run = make_run_dir(root / "runs", method=method, model=model, scores=scores,
                           train_phases=phases_for(seconds) if seconds else None)
        record_run(run, store)
    publish(store, None, root / "site", {"focus_method": "corver"})
    return root / "site" / "index.html"


@pytest.fixture
def browser(tmp_path):
    from .cdp import Browser

    opened = Browser(CHROMIUM, tmp_path / "cdp-profile", width=1400, height=900)
    try:
        yield opened
    finally:
        opened.close()


def column(browser, table: str, key: str) -> list[str | None]:
    """data-value of every body row in the column `key` of table `table`, in display order."""
    return browser.js(f"(() => {{ const t = document.getElementById('t-{table}');"
                      f" const i = Array.from(t.tHead.rows[0].cells).findIndex(h => h.dataset.key === '{key}');"
                      " return Array.from(t.tBodies[0].rows).map(r => r.cells[i].getAttribute('data-value')); })()")


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


def test_a_gain_is_green_and_a_loss_red(mixed, browser):
    browser.open(mixed.resolve().as_uri())
    diffs = browser.js("Array.from(document.querySelectorAll('#t-accuracy .diff')).map(d => "
                       "[d.textContent, d.className, getComputedStyle(d).color])")
    green, red = "rgb(27, 127, 59)", "rgb(176, 0, 32)"
    seen = {(float(text.strip("()")) > 0) - (float(text.strip("()")) < 0): (cls, color) for text, cls, color in diffs}
    assert seen[1] == ("diff up", green)  # CorVer ahead of the best other method
    assert seen[-1] == ("diff down", red)  # behind it
    assert seen[0][0] == "diff even" and seen[0][1] not in (green, red)  # level: neither


def test_first_click_on_a_time_column_sorts_shortest_first(site, browser):
    browser.open(site.resolve().as_uri())
    for key in ("qwen3-4b:time", "mean:time", "ratio"):
        browser.click(f'#t-time th[data-key="{key}"]')
        values = column(browser, "time", key)
        numbers = [float(v) for v in values if v]
        assert numbers == sorted(numbers) and len(numbers) == 2 and values[-1] == "", key  # untimed Raw last
        assert browser.js(f"document.querySelector('#t-time th[data-key=\"{key}\"]').getAttribute('aria-sort')") \
            == "ascending"
        browser.click(f'#t-time th[data-key="{key}"]')
        assert [float(v) for v in column(browser, "time", key) if v] == sorted(numbers, reverse=True)
    browser.click('#t-time th[data-key="mean:macro"]')  # accuracy still sorts best first
    macro = [float(v) for v in column(browser, "time", "mean:macro") if v]
    assert macro == sorted(macro, reverse=True)


def test_time_table_links_name_the_model(site, browser):
    browser.open(site.resolve().as_uri())
    groups = browser.js("Array.from(document.querySelectorAll('#t-time tbody tr')).map(r => "
                        "Array.from(r.querySelectorAll('td.prov .pmodel')).map(m => m.textContent))")
    assert groups and all(g == ["qwen3-4b:", "qwen3-8b:"] for g in groups)
    titles = browser.js("Array.from(document.querySelectorAll('#t-time td.prov a')).map(a => a.title)")
    assert "qwen3-8b / TriviaQA" in titles and len(titles) == len(set(titles)) * 3  # 3 methods share the rows' sets


def test_the_page_fits_1400_px_without_horizontal_overflow(site, browser):
    browser.open(site.resolve().as_uri())
    page = browser.js("({scroll: document.documentElement.scrollWidth, width: window.innerWidth,"
                      " tables: Array.from(document.querySelectorAll('table.sortable')).map(t => [t.id,"
                      " Math.ceil(t.getBoundingClientRect().right), t.parentElement.scrollWidth,"
                      " t.parentElement.clientWidth])})")
    assert page["width"] >= 1380 and page["scroll"] <= page["width"], page
    assert {t[0] for t in page["tables"]} == {"t-accuracy", "t-accuracy_ci", "t-vs_raw", "t-time", "t-multihop"}
    for name, right, scroll, client in page["tables"]:
        assert right <= page["width"] and scroll <= client, (name, right, scroll, client)  # no inner scrolling


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> Path:
    """Raw and FoRAG (reconstructed, a substitute judge) on the same 400 questions, with outcomes."""
    root = tmp_path_factory.mktemp("honest")
    store = root / "lb.sqlite"
    raw = [i < 100 for i in range(400)]
    forag = [i < 90 or 100 <= i < 114 for i in range(400)]  # 14 gained, 10 lost: below its MDE
    judge = {"kind": "judge", "backend": "openai", "model": "qwen3-8b", "revision": None, "stand_in": False,
             "label": "served judge", "served_model": "qwen3-8b", "paper_model": "gpt-4o-mini-2024-07-18",
             "substitute": True}
    for method, correct, components in (("raw", raw, None), ("forag", forag, {"judge": judge})):
        samples = [{"id": f"q{i}", "correct": c, "answer": f"a{i}"} for i, c in enumerate(correct)]
        record_run(make_run_dir(root / "runs", method=method, model="m", scores={"nq_open": 0.0},
                                samples={"nq_open": samples}, components=components), store)
    publish(store, None, root / "site", {"focus_method": "forag"})
    return root / "site" / "index.html"


def test_uncertainty_table_and_provenance_marks_render(honest, browser):
    """The uncertainty and difference-to-Raw views render as tables, with the MDE, the
    'cannot decide' mark, and the reconstructed / judge-substitute marks and legends."""
    browser.open(honest.resolve().as_uri())
    views = browser.js("['t-accuracy_ci', 't-vs_raw'].map(id => Array.from(document.querySelectorAll("
                       "'#' + id + ' tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent.trim())))")
    ci, diff = views
    forag = next(row for row in ci if row[1].startswith("FoRAG"))
    assert "Δraw +1.00§◇ [" in forag[2] and "MDE " in forag[2] and forag[1] == "FoRAG (ours) [1 seed] ¶ ‖"
    assert len(diff) == 1 and diff[0][2].startswith("+1.00§◇ [")
    # The marks' explanations are in the page's one legend, not under every table.
    notes = browser.js("Array.from(document.querySelectorAll('#legend details p')).map(p => p.textContent)")
    assert not browser.js("Array.from(document.querySelectorAll('ul.notes li')).some(li => "
                          "/^(¶|‖|§|MDE) = /.test(li.textContent) || li.textContent.startsWith('MDE = '))")
    assert any("cannot decide at this n" in n for n in notes)
    assert any(n.startswith("¶ = reconstructed") for n in notes)
    assert any(n.startswith("‖ = judge substitute") and "served qwen3-8b for the paper's gpt-4o-mini" in n
               for n in notes)
    title = browser.js("document.querySelector('#t-accuracy tbody tr[data-method=forag] span[title^=\"judge\"]')"
                       ".getAttribute('title')")
    assert title == "judge substitute: served qwen3-8b for the paper's gpt-4o-mini-2024-07-18"

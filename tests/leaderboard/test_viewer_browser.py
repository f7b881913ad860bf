"""The run viewer in headless Chromium: page through rollouts, see the sentence rewards coloured
(checked on a screenshot), filter the side-by-side page for flips, follow the index's links, and
an injected <script> shown as text. The site is built from fixture run directories in the
contract's layout (leaderboard.testing.add_training), published as `harness leaderboard publish`
does. Skipped only where no Chromium is installed (`.ci/run` installs it)."""
from __future__ import annotations

import base64
import io
import json
import time
from pathlib import Path

import pytest

from factrl.leaderboard import publish, record_run
from factrl.leaderboard.testing import add_training, eval_samples, make_run_dir

from .test_lb_browser import CHROMIUM

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")

INJECTED = "<script>window.__xss = 1</script><img src=x onerror=\"window.__xss = 2\"> Marie Curie was born in Warsaw."
N = 60
RAW = [i % 3 == 0 for i in range(N)]
CORVER = [i % 2 == 0 for i in range(N)]  # flips: wrong -> right where i even and not a multiple of 3, and back
CREDITED = [c or i == 1 for i, c in enumerate(CORVER)]  # question 1: a hedge the protocol credits
UP = sum(c and not r for c, r in zip(CREDITED, RAW))
DOWN = sum(r and not c for c, r in zip(CREDITED, RAW))
HEURISTIC = {"extractor": {"kind": "extractor", "backend": "heuristic", "stand_in": True, "label": "heuristic extractor",
                           "note": "capitalised spans stand in for the paper's QuCo extractor"}}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("viewer")
    store = root / "lb.sqlite"
    for method, correct, components in (("raw", RAW, None), ("corver", CORVER, HEURISTIC), ("knowrl", RAW, None)):
        rows = eval_samples(N, correct, answers={1: "wrong1 or gold1"} if method == "corver" else None)
        if method == "corver":
            rows[1]["correct"] = True  # the protocol credits the hedge; strict v2 withdraws it
            rows[5].update(answer=INJECTED, question=INJECTED)
        run = make_run_dir(root / "runs", method=method, model="smollm2-135m", scores={"demo": 0.0},
                           samples={"demo": rows}, components=components, steps=None if method == "raw" else 5,
                           train_phases=None if method == "raw" else {"rollout": 30.0, "update": 30.0})
        if method != "raw":
            add_training(run, method=method, steps=5, rise=0.3 if method == "corver" else 0.0, texts={0: INJECTED})
        record_run(run, store)
    publish(store, None, root / "site", {})
    return root / "site"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from .cdp import Browser

    opened = Browser(CHROMIUM, tmp_path_factory.mktemp("profile"), width=1400, height=1000)
    try:
        yield opened
    finally:
        opened.close()


def _open(browser, url: str) -> None:
    browser.open(url)
    deadline = time.monotonic() + 30
    while not browser.js("document.body.getAttribute('data-ready')"):
        assert time.monotonic() < deadline, f"{url} never became ready"
        time.sleep(0.05)
    assert browser.js("document.body.getAttribute('data-ready')") != "error"


def _page(site: Path, method: str) -> Path:
    (page,) = [p for p in (site / "viewer" / "runs").glob(f"*-{method}-*.html")]
    return page


def _wait(browser, expression: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = browser.js(expression)
        except RuntimeError:  # the page is navigating (a clicked link): its old context is gone
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, expression
        time.sleep(0.05)


def test_rollouts_page_step_by_step_and_load_lazily(site, browser):
    _open(browser, _page(site, "corver").as_uri())
    assert browser.js("document.getElementById('rollouts').getAttribute('data-step')") == "1"
    loaded = "window.factrlLoaded.map(k => k.split('/').slice(-2).join('/'))"
    assert [n for n in browser.js(loaded) if n.startswith("steps/")] == ["steps/1-0.js"]  # only what is shown
    assert browser.js("document.querySelectorAll('#rollouts .group').length") == 2
    assert browser.js("document.querySelectorAll('#rollouts .comp').length") == 8
    browser.click("#rollouts .controls button:nth-of-type(2)")  # next step
    _wait(browser, "document.getElementById('rollouts').getAttribute('data-step') === '2'")
    assert "steps/2-0.js" in browser.js(loaded) and "steps/3-0.js" not in browser.js(loaded)
    questions = browser.js("Array.from(document.querySelectorAll('#rollouts .question')).map(q => q.textContent)")
    assert questions == ["Where was Marie Curie born? (row2-0)", "Where was Marie Curie born? (row2-1)"]
    browser.click("#rollouts .controls button:nth-of-type(1)")  # back
    _wait(browser, "document.getElementById('rollouts').getAttribute('data-step') === '1'")
    # The knowrl run has one record per completion: its grade is shown as reward detail.
    _open(browser, _page(site, "knowrl").as_uri())
    chips = browser.js("Array.from(document.querySelectorAll('#rollouts .comp .chip')).map(c => c.textContent)")
    assert any(c.startswith("grade: ") for c in chips) and any(c.startswith("no signal: judge_failed") for c in chips)


def _tinted(png: bytes, boxes: list[list[float]]) -> tuple[int, int]:
    """(green-tinted, red-tinted) pixels inside the boxes of a screenshot."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    green = red = 0
    for x, y, w, h in boxes:
        crop = image.crop((int(x), int(y), int(x + w), int(y + h)))
        for r, g, b in crop.getdata():
            green += g > r + 15 and g > b + 8
            red += r > g + 15 and r > b + 15
    return green, red


def test_a_screenshot_shows_the_sentences_coloured_by_their_reward(site, browser, tmp_path):
    _open(browser, _page(site, "corver").as_uri())
    browser.js("document.getElementById('rollouts').scrollIntoView()")
    spans = browser.js("Array.from(document.querySelectorAll('#rollouts .s')).map(s => parseFloat(s.dataset.value))")
    values = [v for v in spans if v is not None]
    assert any(v > 0 for v in values) and any(v < 0 for v in values)  # CorVer pays some sentences, costs others
    boxes = browser.js("Array.from(document.querySelectorAll('#rollouts .text')).map(e => { const r = "
                       "e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }).filter(b => b[1] >= 0 && "
                       "b[1] + b[3] <= window.innerHeight)")
    assert boxes, "no completion text in view"
    png = base64.b64decode(browser.call("Page.captureScreenshot", {"format": "png"})["data"])
    (tmp_path / "rollouts.png").write_bytes(png)
    green, red = _tinted(png, boxes)
    assert green > 500 and red > 500, (green, red)  # both colours are painted, on the text itself
    # A completion without scored sentences would be neutral: the test sees colour, not the page's chrome.
    plain = _tinted(png, [[b[0], b[1], 12, b[3]] for b in boxes])  # the left padding of each text box
    assert plain == (0, 0)


def test_an_injected_script_is_shown_as_text_everywhere(site, browser):
    for page, selector in ((_page(site, "corver"), "#rollouts .text"), (_page(site, "corver").as_uri() + "#set=demo&i=5",
                                                                         "#samples tr.hit")):
        _open(browser, page.as_uri() if isinstance(page, Path) else page)
        _wait(browser, f"!!document.querySelector({json.dumps(selector)})")
        text = browser.js(f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => e.textContent)"
                          ".join(' ')")
        assert "<script>window.__xss = 1</script><img src=x onerror=" in text
        assert browser.js("window.__xss === undefined") is True
        assert browser.js("document.querySelectorAll('main img[src=x], main script').length") == 0
    compare = next((site / "viewer" / "compare").glob("*.html"))
    _open(browser, compare.as_uri())
    assert "<script>window.__xss = 1</script>" in browser.js("document.getElementById('compare').textContent")
    assert browser.js("window.__xss === undefined") is True


def _select(browser, selector: str, value: str) -> None:
    browser.js(f"(() => {{ const s = document.querySelector({json.dumps(selector)}); s.value = {json.dumps(value)};"
               " s.dispatchEvent(new Event('change')); })()")


def test_the_side_by_side_page_filters_flips(site, browser):
    compare = next((site / "viewer" / "compare").glob("*.html"))
    _open(browser, compare.as_uri())
    heads = browser.js("Array.from(document.querySelectorAll('#compare th')).map(h => h.textContent)")
    assert heads == ["question · golds", "Raw", "KnowRL", "CorVer ‡"[:6]]
    assert browser.js("document.getElementById('compare').getAttribute('data-matches')") == str(N)
    _select(browser, "#compare select[aria-label=filter]", "up")
    _wait(browser, "document.getElementById('compare').getAttribute('data-view') === 'up:0'")
    assert browser.js("document.getElementById('compare').getAttribute('data-matches')") == str(UP)
    rows = browser.js("Array.from(document.querySelectorAll('#compare tbody tr')).map(r => "
                      "[!r.cells[1].textContent.includes('✓ right'), r.cells[3].className])")
    assert len(rows) == UP and all(raw_wrong and cls == "flip-up" for raw_wrong, cls in rows)
    _select(browser, "#compare select[aria-label=filter]", "down")
    _wait(browser, "document.getElementById('compare').getAttribute('data-view') === 'down:0'")
    assert browser.js("document.getElementById('compare').getAttribute('data-matches')") == str(DOWN)
    assert set(browser.js("Array.from(document.querySelectorAll('#compare tbody td.flip-down')).map(td => "
                          "td.cellIndex)")) == {3}
    _select(browser, "#compare select[aria-label=filter]", "flagged")
    _wait(browser, "document.getElementById('compare').getAttribute('data-view') === 'flagged:0'")
    assert browser.js("document.getElementById('compare').getAttribute('data-matches')") == "1"
    assert "strict v2: candidates" in browser.js("document.querySelector('#compare tbody').textContent")
    _select(browser, "#compare select[aria-label=method]", "1")  # flips of KnowRL alone: none
    _select(browser, "#compare select[aria-label=filter]", "flipped")
    _wait(browser, "document.getElementById('compare').getAttribute('data-view') === 'flipped:1'")
    assert browser.js("document.getElementById('compare').getAttribute('data-matches')") == "0"


def test_run_page_filters_and_pages_samples(site, browser):
    _open(browser, _page(site, "corver").as_uri() + "#set=demo")
    assert browser.js("document.getElementById('samples').getAttribute('data-shown')") == "50"  # page 1 of 2
    _select(browser, "#samples select[aria-label=filter]", "withdrawn")
    _wait(browser, "document.getElementById('samples').getAttribute('data-view') === 'demo:withdrawn'")
    assert browser.js("document.getElementById('samples').getAttribute('data-shown')") == "1"
    assert "strict: candidates" in browser.js("document.querySelector('#samples tbody').textContent")
    _select(browser, "#samples select[aria-label=filter]", "correct")
    _wait(browser, "document.getElementById('samples').getAttribute('data-view') === 'demo:correct'")
    assert browser.js("document.getElementById('samples').getAttribute('data-shown')") == str(sum(CREDITED))


def test_the_index_links_cells_to_samples_and_lines_to_runs(site, browser):
    browser.open((site / "index.html").as_uri())
    link = browser.js("document.querySelector('#t-accuracy tr[data-method=corver] td[data-value] a').getAttribute('href')")
    assert link.startswith("viewer/runs/") and link.endswith(".html#set=demo") and (site / link.split("#")[0]).is_file()
    run = browser.js("document.querySelector('#t-accuracy tr[data-method=corver] a.run').getAttribute('href')")
    assert run == link.split("#")[0]
    # The stand-in mark expands on demand, over the table.
    assert browser.js("document.querySelector('#t-accuracy tr[data-method=corver] details.mark').open") is False
    browser.click("#t-accuracy tr[data-method=corver] details.mark summary")
    assert browser.js("document.querySelector('#t-accuracy tr[data-method=corver] details.mark .pop')"
                      ".getBoundingClientRect().width") > 100
    assert browser.js("document.querySelectorAll('#legend details').length") >= 1
    # The training curves of each trained line are on the index and one click away on its run page.
    sources = browser.js("Array.from(document.querySelectorAll('figure.curves img')).map(i => i.getAttribute('src'))")
    assert len(sources) == 3 and all((site / src).is_file() for src in sources)  # overlay + CorVer + KnowRL
    for index in range(3):  # loaded lazily: each when scrolled to
        browser.js(f"document.querySelectorAll('figure.curves img')[{index}].scrollIntoView()")
        _wait(browser, f"document.querySelectorAll('figure.curves img')[{index}].naturalWidth > 500")
    browser.click("#t-accuracy tr[data-method=corver] td[data-value] a")
    _wait(browser, "document.body.getAttribute('data-ready') && document.getElementById('samples')"
                   " && document.getElementById('samples').getAttribute('data-set') === 'demo'")
    assert browser.js("document.querySelector('#curves + figure img').naturalWidth") > 500


def test_every_run_page_says_its_stand_ins(site):
    pages = sorted((site / "viewer" / "runs").glob("*.html"))
    assert len(pages) == 3
    for page in pages:
        html = page.read_text()
        assert 'id="stand-ins"' in html and html.count('id="legend"') == 1
        assert ("heuristic extractor" in html) == ("-corver-" in page.name)
        assert "http://" not in html and "https://" not in html  # nothing from the network
    assert "Stand-ins:</b> none recorded" in _page(site, "raw").read_text()

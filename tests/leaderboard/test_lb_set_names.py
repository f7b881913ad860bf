"""The tables read the sets' names, labels, order and Macro from the name registry: a published
multi-hop table heads 2Wiki's column "2WikiMultiHopQA", in its place after HotpotQA, in the
markdown and on the HTML page; a layout that names an unregistered set fails in one line."""
from __future__ import annotations

import re

import pytest

from factrl.harness.core.errors import ConfigError
from factrl.leaderboard.cli import main
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir


def _publish(runs, store_path, tmp_path, capsys) -> tuple[str, str]:
    # twowiki first in the run, so a table sorted by name or arrival would put it before HotpotQA.
    corver = make_run_dir(runs, method="corver", scores={"twowiki": {"em": 0.31, "f1": 0.42},
                                                         "hotpotqa": {"em": 0.25, "f1": 0.35}, "triviaqa": 0.6})
    raw = make_run_dir(runs, method="raw", scores={"twowiki": {"em": 0.21, "f1": 0.32},
                                                   "hotpotqa": {"em": 0.15, "f1": 0.25}, "triviaqa": 0.5})
    assert main(["add", str(corver), str(raw), "--store", str(store_path)]) == 0
    assert main(["publish", "--store", str(store_path), "--out", str(tmp_path / "site")]) == 0
    capsys.readouterr()
    return ((tmp_path / "site" / "leaderboard.md").read_text(encoding="utf-8"),
            (tmp_path / "site" / "index.html").read_text(encoding="utf-8"))


def test_published_multihop_table_heads_2wiki_by_its_label_in_its_place(runs, store_path, tmp_path, capsys):
    markdown, page = _publish(runs, store_path, tmp_path, capsys)
    section = markdown[markdown.index("multi-hop"):]
    header = next(line for line in section.splitlines() if "HotpotQA" in line)
    assert "2WikiMultiHopQA" in header and "twowiki" not in header
    assert header.index("HotpotQA") < header.index("2WikiMultiHopQA")  # the registry's order, not the name's
    assert "| 31.00 | 42.00 |" in section.replace("**", "")  # CorVer's 2Wiki EM and F1 under that header
    # The HTML page: the multi-hop table's column headers (set label, then metric), in order.
    table = page[page.index('id="t-multihop"'):]
    table = table[:table.index("</thead>")]
    headers = re.findall(r'<th data-key="([^"]+)"[^>]*><span class="grp">([^<]+)</span>([^<]+)</th>', table)
    assert headers == [("hotpotqa:em", "HotpotQA", "EM"), ("hotpotqa:f1", "HotpotQA", "F1"),
                       ("twowiki:em", "2WikiMultiHopQA", "EM"), ("twowiki:f1", "2WikiMultiHopQA", "F1")], headers


def test_layout_takes_labels_order_and_macro_from_the_registry():
    layout = Layout(load())
    assert layout.set_label("twowiki") == "2WikiMultiHopQA"
    assert layout.macro_sets == ["triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa"]
    assert layout.sort_sets(["demo", "twowiki", "hotpotqa", "unregistered", "popqa"]) == [
        "popqa", "hotpotqa", "twowiki", "demo", "unregistered"]


def test_a_layout_may_relabel_only_a_registered_set(tmp_path):
    assert Layout({**load(), "set_labels": {"twowiki": "2Wiki"}}).set_label("twowiki") == "2Wiki"
    with pytest.raises(ConfigError, match=r"layout set_labels='2wikimultihopqa': unknown evaluation set"):
        Layout({**load(), "set_labels": {"2wikimultihopqa": "2WikiMultiHopQA"}})
    with pytest.raises(ConfigError, match=r"layout macro_sets: .*registry entries"):
        Layout({**load(), "macro_sets": ["triviaqa"]})

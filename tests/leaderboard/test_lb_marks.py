"""Reconstructed methods and judge substitutes are marked in every format, with a legend
(leaderboard/marks.py); the stand-in mark keeps its meaning."""
from __future__ import annotations

import csv
import sys

import pytest

from factrl.harness.core.registry import methods as registry  # the module whose functions read it
from factrl.harness.core.registry import get_method
from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.marks import RECONSTRUCTED_MARK, SUBSTITUTE_MARK, declared_fidelity, row_fidelity
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir

PAPER_JUDGE = "gpt-4o-mini-2024-07-18"


def judge(served: str, *, stand_in: bool = False) -> dict:
    """A judge component as docs/CONTRACTS.md "Judge provenance" has it."""
    return {"kind": "judge", "backend": "openai", "model": served, "revision": None, "stand_in": stand_in,
            "label": f"judge {served}", "note": "embedded judge instead of the paper's" if stand_in else None,
            "served_model": served, "paper_model": PAPER_JUDGE, "substitute": served != PAPER_JUDGE}


def test_forag_declares_itself_reconstructed_and_the_source_read_agrees():
    assert get_method("forag").fidelity == "reconstructed" == declared_fidelity("forag")
    for name in ("corver", "fspo", "knowrl", "rlfh", "raw"):
        assert declared_fidelity(name) in (None, "original"), name  # the default: no mark


def test_the_mark_follows_the_declaration_not_the_name(tmp_path, monkeypatch):
    """A plugin declaring `fidelity = "reconstructed"` is marked, read from its source without
    importing it; a row's component entry `fidelity` counts too."""
    (tmp_path / "myplugin_recon.py").write_text(
        "from factrl.harness.core.method import Method\n\n"
        "class Mine(Method):\n    name = 'mine'\n    description = 'x'\n    fidelity = 'reconstructed'\n\n"
        "METHOD = Mine\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    real = registry.method_target
    monkeypatch.setattr(registry, "method_target",
                        lambda name: "myplugin_recon:METHOD" if name == "mine" else real(name))
    registry.declared.cache_clear()
    try:
        assert declared_fidelity("mine") == "reconstructed" and "myplugin_recon" not in sys.modules
        recorded = {"settings": {"kind": "settings", "fidelity": "reconstructed"}}
        row = {"method": {"name": "corver"}, "components": recorded}
        assert row_fidelity(row) == "reconstructed" and row_fidelity({"method": {"name": "corver"}}) == "original"
        assert row_fidelity({"method": {"name": "mine"}}) == "reconstructed"
    finally:
        registry.declared.cache_clear()


@pytest.fixture
def marked_store(runs, store_path):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.5}), store_path)
    record_run(make_run_dir(runs, method="forag", model="m", scores={"triviaqa": 0.55},
                            components={"judge": judge("qwen3-8b")}), store_path)
    record_run(make_run_dir(runs, method="knowrl", model="m", scores={"triviaqa": 0.52},
                            components={"judge": judge("embedded-smollm2", stand_in=True)}), store_path)
    record_run(make_run_dir(runs, method="fspo", model="m", scores={"triviaqa": 0.53},
                            components={"judge": judge(PAPER_JUDGE)}), store_path)  # the paper's judge
    return store_path


def test_lines_carry_the_marks(marked_store):
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(marked_store).rows("1")]
    accuracy = build_tables(rows, Layout(load()))[0]
    lines = {line.method: line for line in accuracy.lines}
    assert lines["forag"].reconstructed and not lines["knowrl"].reconstructed and not lines["raw"].reconstructed
    assert lines["forag"].substitutes == [f"served qwen3-8b for the paper's {PAPER_JUDGE}"]
    assert lines["knowrl"].substitutes and lines["knowrl"].stand_ins == ["judge embedded-smollm2"]  # both marks
    assert lines["fspo"].substitutes == [] and lines["fspo"].stand_ins == []


def test_every_format_marks_reconstructed_and_substitute_lines(marked_store, tmp_path):
    out = tmp_path / "site"
    publish(marked_store, None, out)
    md = (out / "leaderboard.md").read_text()
    assert f"|  | FoRAG {RECONSTRUCTED_MARK}{SUBSTITUTE_MARK} |" in md
    assert f"|  | KnowRL ‡{SUBSTITUTE_MARK} |" in md and "|  | FSPO |" in md
    assert f"- {RECONSTRUCTED_MARK} = reconstructed: the method has no public implementation" in md
    legend = next(n for n in md.replace("\\", "").splitlines()
                  if n.startswith(f"- {SUBSTITUTE_MARK} = judge substitute"))
    assert legend.startswith(f"- {SUBSTITUTE_MARK} = judge substitute: judged by a served model other than the "
                             "paper's judge: served embedded-smollm2 for the paper's")
    assert f"served qwen3-8b for the paper's {PAPER_JUDGE} (m / FoRAG)" in legend and "FSPO" not in legend
    with open(out / "accuracy.csv", newline="") as handle:
        lines = {r["method"]: r for r in csv.DictReader(handle)}
    assert lines["forag"]["reconstructed"] == "true" and lines["fspo"]["reconstructed"] == ""
    assert lines["forag"]["judge_substitute"] == f"served qwen3-8b for the paper's {PAPER_JUDGE}"
    assert lines["knowrl"]["stand_ins"] == "judge embedded-smollm2" and lines["knowrl"]["judge_substitute"]
    tex = (out / "tables.tex").read_text()
    assert r"FoRAG \textsuperscript{\P}\textsuperscript{\textbardbl} &" in tex
    assert r"\P{} = reconstructed" in tex and r"\textbardbl{} = judge substitute" in tex
    html = (out / "index.html").read_text()
    assert (f'title="judge substitute: served qwen3-8b for the paper&#x27;s {PAPER_JUDGE}">{SUBSTITUTE_MARK}</span>'
            in html)
    assert f"harness&#x27;s design\">{RECONSTRUCTED_MARK}</span>" in html
    assert f"reconstructed {RECONSTRUCTED_MARK}" in html  # the row's provenance section


def test_a_method_prompt_row_is_marked_in_every_format(runs, store_path, tmp_path):
    """A row whose generations used a method's prompt addition (generation.method_prompt) carries
    METHOD_PROMPT_MARK and its legend; a row of the shared prompt does not."""
    import json

    from factrl.leaderboard.marks import METHOD_PROMPT_MARK

    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.5}), store_path)
    run = make_run_dir(runs, method="fspo", model="m", scores={"triviaqa": 0.55})
    file = run / "eval" / "triviaqa" / "metrics.json"
    doc = json.loads(file.read_text())
    doc["generation"]["method_prompt"] = {"method": "fspo", "position": "system, after the shared prompt",
                                          "hash": "0123456789abcdef", "chars": 12, "system_hash": "fedcba9876543210"}
    file.write_text(json.dumps(doc))
    record_run(run, store_path)
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    lines = {line.method: line for line in build_tables(rows, Layout(load()))[0].lines}
    assert lines["fspo"].method_prompt and not lines["raw"].method_prompt
    out = tmp_path / "site"
    publish(store_path, None, out)
    md = (out / "leaderboard.md").read_text()
    assert f"|  | FSPO {METHOD_PROMPT_MARK} |" in md and "| Raw |" in md and f"Raw {METHOD_PROMPT_MARK}" not in md
    legends = [n for n in md.replace("\\", "").splitlines() if n.startswith(f"- {METHOD_PROMPT_MARK} = method prompt")]
    assert legends and all(n.endswith("m / FSPO.") or n.endswith("m / FSPO [1 seed].") for n in legends)
    assert r"FSPO \textsuperscript{$\ast$} &" in (out / "tables.tex").read_text()
    assert f'addition">{METHOD_PROMPT_MARK}</span>' in (out / "index.html").read_text()

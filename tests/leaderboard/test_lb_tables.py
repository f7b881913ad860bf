"""Table layouts: marks, differences, macro, run selection, time ratios, escaping."""
from __future__ import annotations

from factrl.leaderboard import Store, record_run
from factrl.leaderboard.render.formats import latex, latex_escape, markdown, md_escape
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout, hmm
from factrl.leaderboard.testing import make_run_dir

from .conftest import FIVE, PAPER_LLAMA32_3B, PAPER_TIMES, phases_for


def tables_of(store_path, **layout):
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    return {t.name: t for t in build_tables(rows, Layout({**load(), **layout}))}


def paper_tables(store_path, **layout):
    """The paper's view: CorVer asked for as the focus (`publish --focus corver`)."""
    return tables_of(store_path, focus_method="corver", **layout)


def test_paper_table1_llama32_3b_marks_and_differences(runs, store_path):
    for method, values in PAPER_LLAMA32_3B.items():
        run = make_run_dir(runs, method=method, model="llama-3.2-3b",
                           scores={s: v / 100 for s, v in zip(FIVE, values)})
        record_run(run, store_path)
    text = markdown(paper_tables(store_path)["accuracy"])
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0] == "| Model | Method | TriviaQA | NQ-Open | PopQA | SimpleQA | TruthfulQA | Macro |"
    # Raw first, CorVer ("ours") last, the rest in configs/leaderboard/layout/paper.yaml order.
    # FoRAG declares itself reconstructed (no public code): its line carries the mark.
    assert [line.split("|")[2].strip() for line in lines[2:]] == ["Raw", "FSPO", "RLFH", "FoRAG ¶", "KnowRL",
                                                                 "CorVer (ours)"]
    assert lines[2].startswith("| llama-3.2-3b | Raw |") and lines[3].startswith("|  | FSPO |")
    # The paper's CorVer row: bold best, underlined second, difference to the best competitor.
    assert lines[-1] == ("|  | CorVer (ours) | **66.19** (+5.40) | **45.48** (+5.20) | **26.26** (+4.15) | "
                         "<u>3.91</u> (-0.39) | **46.76** (+4.41) | **37.72** (+4.27) |")
    fspo = next(line for line in lines if "| FSPO |" in line)
    assert fspo == "|  | FSPO | 59.45 | 40.25 | <u>22.11</u> | **4.30** | 41.13 | <u>33.45</u> |"
    forag = next(line for line in lines if "| FoRAG ¶ |" in line)
    assert forag == "|  | FoRAG ¶ | <u>60.79</u> | <u>40.28</u> | 21.17 | 2.24 | <u>42.35</u> | 33.37 |"


def test_ties_share_a_mark_and_two_lines_get_no_underline(runs, store_path):
    for method, value in (("raw", 0.5), ("fspo", 0.6), ("rlfh", 0.6), ("corver", 0.55)):
        record_run(make_run_dir(runs, method=method, model="m", scores={"triviaqa": value}), store_path)
    record_run(make_run_dir(runs, method="raw", model="n", scores={"triviaqa": 0.4}), store_path)
    record_run(make_run_dir(runs, method="corver", model="n", scores={"triviaqa": 0.45}), store_path)
    record_run(make_run_dir(runs, method="raw", model="o", scores={"triviaqa": 0.3}), store_path)
    record_run(make_run_dir(runs, method="corver", model="o", scores={"triviaqa": 0.3}), store_path)
    lines = [line for line in markdown(paper_tables(store_path)["accuracy"]).splitlines() if line.startswith("|  |")
             or line.startswith("| m |") or line.startswith("| n |") or line.startswith("| o |")]
    assert lines == ["| m | Raw | 50.00 | 50.00 |",
                     "|  | FSPO | **60.00** | **60.00** |",
                     "|  | RLFH | **60.00** | **60.00** |",
                     "|  | CorVer (ours) | <u>55.00</u> (-5.00) | <u>55.00</u> (-5.00) |",
                     "| n | Raw | 40.00 | 40.00 |",
                     "|  | CorVer (ours) | **45.00** (+5.00) | **45.00** (+5.00) |",
                     "| o | Raw | 30.00 | 30.00 |",  # all tie: no marks
                     "|  | CorVer (ours) | 30.00 (+0.00) | 30.00 (+0.00) |"]


def test_macro_needs_every_set_and_the_complete_best_run_is_kept(runs, store_path):
    record_run(make_run_dir(runs, method="raw", scores={"triviaqa": 0.5, "popqa": 0.2}), store_path)
    record_run(make_run_dir(runs, method="corver", seed=1, scores={"triviaqa": 0.9}), store_path)  # incomplete
    record_run(make_run_dir(runs, method="corver", seed=2, scores={"triviaqa": 0.6, "popqa": 0.3}), store_path)
    # Another configuration (steps), not a seed replica of seed 2: the tables average seed replicas.
    record_run(make_run_dir(runs, method="corver", seed=3, steps=200, scores={"triviaqa": 0.55, "popqa": 0.25}),
               store_path)
    record_run(make_run_dir(runs, method="fspo", scores={"triviaqa": 0.7}), store_path)
    table = tables_of(store_path)["accuracy"]
    corver = next(line for line in table.lines if line.method == "corver")
    assert corver.cells["macro"].text == "45.00" and "seed" not in corver.run_ids[0]
    assert corver.cells["triviaqa"].text == "60.00"
    fspo = next(line for line in table.lines if line.method == "fspo")
    assert fspo.cells["popqa"].text == "—" and fspo.cells["macro"].value is None
    assert any("3 runs; kept" in note for note in table.notes)


def test_time_table_layout_and_ratios(runs, store_path):
    for model, times in PAPER_TIMES.items():
        record_run(make_run_dir(runs, method="raw", model=model, scores={"triviaqa": 0.3}), store_path)
        for method, seconds in times.items():
            record_run(make_run_dir(runs, method=method, model=model, scores={"triviaqa": 0.4},
                                    train_phases=phases_for(seconds)), store_path)
    table = tables_of(store_path)["time"]
    text = markdown(table)
    assert "| Method | Steps | qwen3-4b Macro | qwen3-4b Time | qwen3-8b Macro | qwen3-8b Time | Mean Macro | " \
           "Mean Time | Time ratio / CorVer |" in text
    assert "| Raw | — | 30.00 | — | 30.00 | — | 30.00 | — | — |" in text
    # Table 18: CorVer 2:01 and 1:36 (mean 1:49), FSPO 10:58 and 9:04 (mean 10:01).
    assert "| CorVer | 100 | 40.00 | 2:01 | 40.00 | 1:36 | 40.00 | 1:48 | 1.00× |" in text
    fspo_mean = (PAPER_TIMES["qwen3-4b"]["fspo"] + PAPER_TIMES["qwen3-8b"]["fspo"]) / 2
    corver_mean = (PAPER_TIMES["qwen3-4b"]["corver"] + PAPER_TIMES["qwen3-8b"]["corver"]) / 2
    assert f"| FSPO | 100 | 40.00 | 10:58 | 40.00 | 9:04 | 40.00 | 10:01 | {fspo_mean / corver_mean:.2f}× |" in text
    assert "Timed on NVIDIA H100 80GB HBM3 ×1" in text
    assert hmm(6539) == "1:49" and hmm(29) == "0:00" and hmm(None) == "—"


def test_multihop_table_marks_best_only(runs, store_path):
    for method, (em, f1) in (("raw", (0.0799, 0.1428)), ("fspo", (0.1480, 0.2200)), ("corver", (0.1642, 0.2306))):
        record_run(make_run_dir(runs, method=method, model="llama-3.2-3b",
                                scores={"hotpotqa": {"em": em, "f1": f1}}), store_path)
    text = markdown(paper_tables(store_path)["multihop"])
    assert "| Model | Method | HotpotQA EM | HotpotQA F1 |" in text
    assert "|  | CorVer (ours) | **16.42** | **23.06** |" in text and "<u>" not in text


def test_escaping_of_special_characters():
    name = "<b>x</b> & {y}_$1 #2 %3 ~^\\ |*`"
    assert md_escape(name) == "&lt;b&gt;x&lt;/b&gt; &amp; {y}\\_\\$1 \\#2 %3 \\~^\\\\ \\|\\*\\`"
    assert latex_escape(name) == (r"\textless{}b\textgreater{}x\textless{}/b\textgreater{} \& \{y\}\_\$1 \#2 \%3 "
                                  r"\textasciitilde{}\textasciicircum{}\textbackslash{} \textbar{}*`")


def test_latex_table_has_groups_and_marks(runs, store_path):
    for method, values in PAPER_LLAMA32_3B.items():
        run = make_run_dir(runs, method=method, model="llama_3.2", scores={s: v / 100 for s, v in zip(FIVE, values)})
        record_run(run, store_path)
    tex = latex(paper_tables(store_path)["accuracy"], "tab:acc")
    assert r"\begin{tabular}{llrrrrrr}" in tex and r"\toprule" in tex and r"\bottomrule" in tex
    assert r"llama\_3.2 & Raw &" in tex
    assert r"CorVer (ours) & \textbf{66.19}\,{\scriptsize (+5.40)}" in tex and r"\underline{3.91}" in tex


def test_neutral_by_default_no_method_is_ours(runs, store_path):
    for method, values in PAPER_LLAMA32_3B.items():
        record_run(make_run_dir(runs, method=method, model="llama-3.2-3b",
                                scores={s: v / 100 for s, v in zip(FIVE, values)}), store_path)
    table = tables_of(store_path)["accuracy"]
    text = markdown(table)
    assert "(ours)" not in text and "(+" not in text and "(±x)" not in text
    assert all(cell.diff is None for line in table.lines for cell in line.cells.values())
    # Raw first, then the layout's method order; no method is singled out.
    assert [line.method_label for line in table.lines] == ["Raw", "FSPO", "RLFH", "FoRAG", "KnowRL", "CorVer"]
    focused = markdown(tables_of(store_path, focus_method="fspo")["accuracy"])
    assert "FSPO (ours)" in focused and focused.index("FSPO (ours)") > focused.index("| CorVer |")


def test_time_table_steps_show_every_model_when_they_differ(runs, store_path):
    for model, steps in (("qwen3-4b", 100), ("qwen3-8b", 250)):
        record_run(make_run_dir(runs, method="corver", model=model, scores={"triviaqa": 0.4}, steps=steps,
                                train_phases=phases_for(3600)), store_path)
        record_run(make_run_dir(runs, method="fspo", model=model, scores={"triviaqa": 0.4}, steps=100,
                                train_phases=phases_for(7200)), store_path)
    table = tables_of(store_path)["time"]
    steps = {line.method: line.cells["steps"] for line in table.lines}
    assert steps["corver"].text == "100 / 250" and steps["corver"].value == 250
    assert len(steps["corver"].row_ids) == 2  # both models' runs, not only the last one
    assert steps["fspo"].text == "100" and steps["fspo"].value == 100
    assert not next(c for c in table.columns if c.key == "qwen3-4b:time").higher_is_better
    assert not next(c for c in table.columns if c.key == "ratio").higher_is_better

"""FActScore-NPM in leaderboard rows and the published table (method rows; F, S, A, N and the
four quantities), with the evaluation's own stand-ins marked."""
from __future__ import annotations

import json

from factrl.leaderboard import Store, record_run
from factrl.leaderboard.render.formats import csv_text, markdown
from factrl.leaderboard.record import rows_from_run
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir


def _add_factscore(run, f, s, a, n, stand_in=True, pinned=None):
    path = run / "eval" / "hotpotqa" / "metrics.json"
    doc = json.loads(path.read_text())
    entry = lambda v, k=n: {"value": v, "n": k, "stderr": None, "higher_is_better": True}  # noqa: E731
    doc["metrics"].update({"factscore_precision": entry(s / f, f), "factscore_supported_per_response": entry(s / n),
                           "factscore_coverage": entry(a / n), "factscore_facts_per_response": entry(f / n),
                           "factscore_facts": entry(f), "factscore_supported": entry(s),
                           "factscore_covered": entry(a), "factscore_responses": entry(n)})
    doc["judged"] = {"factscore": {"seed": 42, "counts": {"facts": f, "supported": s, "covered": a, "responses": n},
                                   "components": {"masked_lm": {"kind": "masked_lm", "stand_in": stand_in,
                                                                "label": "NPM stand-in", "note": "tiny random"}}}}
    if pinned is not None:  # the real masked LM, loaded by hub id
        doc["judged"]["factscore"]["components"]["masked_lm"].update(
            label="NPM (npm-single)", revision="ab" * 20, revision_pinned=pinned)
    path.write_text(json.dumps(doc))
    return run


def test_rows_carry_the_judged_section_and_the_table_shows_the_counts(tmp_path):
    runs, store_path = tmp_path / "runs", tmp_path / "lb.sqlite"
    raw = _add_factscore(make_run_dir(runs, method="raw", model="llama-3.2-3b",
                                      scores={"hotpotqa": {"em": 0.2, "f1": 0.3}}), 1543, 1292, 614, 1000)
    ours = _add_factscore(make_run_dir(runs, method="corver", model="llama-3.2-3b",
                                       scores={"hotpotqa": {"em": 0.3, "f1": 0.4}}), 1600, 1400, 700, 1000,
                          stand_in=False, pinned=False)
    row = rows_from_run(raw)[0]
    assert row["judged"]["factscore"]["counts"]["facts"] == 1543
    record_run(raw, store_path)
    record_run(ours, store_path)
    record_run(raw, store_path)  # a re-add of identical content stays a no-op
    rows = Store(store_path).rows()
    tables = {t.name: t for t in build_tables(rows, Layout(load()))}
    table = tables["factscore"]
    assert [c.label for c in table.columns] == ["F", "S", "A", "N", "S/F (%)", "S/N", "A/N (%)", "F/N"]
    lines = {line.method: line for line in table.lines}
    assert [lines["raw"].cells[k].text for k in ("facts", "supported", "covered", "responses")] == \
        ["1,543", "1,292", "614", "1,000"]
    assert lines["raw"].cells["precision"].text == f"{100 * 1292 / 1543:.2f}"
    assert lines["raw"].cells["coverage"].text == "61.40" and lines["raw"].cells["facts_per_response"].text == "1.54"
    assert lines["corver"].cells["precision"].mark == "best"
    assert lines["raw"].stand_ins == ["NPM stand-in"] and lines["corver"].stand_ins == []
    text = markdown(table)
    assert "‡" in text and "NPM stand-in (tiny random), used by llama-3.2-3b / Raw" in text
    assert ",1543.0,1292.0,614.0,1000.0," in csv_text(table)  # CSV keeps the raw values
    assert ("revision was not pinned (the commit that loaded is recorded): NPM (npm-single)@abababababab "
            "(llama-3.2-3b / CorVer)") in text
    assert text.count("not pinned") == 1  # the raw row's stand-in has no hub revision to pin

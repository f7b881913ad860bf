"""The run viewer's data: shards, the join of rollouts with every method's reward records, the
coloured sentences, samples with their strict verdicts, flags and filter codes, side by side,
and what a run from an older harness says it lacks. No browser here (test_viewer_browser.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from factrl.leaderboard import publish, record_run
from factrl.leaderboard.testing import add_training, eval_samples, make_run_dir
from factrl.leaderboard.viewer import rollouts, samples, sentences, shards
from factrl.leaderboard.viewer.runfiles import read, read_jsonl

METHODS = ("corver", "fspo", "forag", "rlfh", "knowrl", "nover")


def _shard(path: Path) -> dict:
    return shards.read(path)[1]


def test_a_shard_is_one_call_whose_payload_reads_back_exactly(tmp_path):
    nasty = {"text": "</script><script>alert(1)</script>\u2028line\u2029para \"quoted\" \\ é", "x": float("nan")}
    path = shards.write(tmp_path, "runs/r/steps/1-0.js", nasty)
    body = path.read_text(encoding="utf-8")
    assert body.startswith('factrlShard("runs/r/steps/1-0.js",') and body.endswith(");\n")
    assert "\u2028" not in body and "\\u2028" in body  # escaped for older JavaScript engines
    key, data = shards.read(path)
    assert key == "runs/r/steps/1-0.js" and data == {**nasty, "x": None}  # NaN: null, JSON has none


@pytest.mark.parametrize("method", METHODS)
def test_every_methods_records_join_their_completion(tmp_path, method):
    run = add_training(make_run_dir(tmp_path, method=method), method=method, steps=2, questions=2, group_size=3)
    lines = read_jsonl(run / "train" / "rollouts.jsonl", [], "r")
    records = read_jsonl(run / "train" / "reward_records.jsonl", [], "rr")
    joined, attached, notes = rollouts.join(lines, records)
    assert notes == [] and len(attached) == len(lines) == 12  # every completion got its records
    shard = next(s for step, part, s in rollouts.steps(joined, attached, 3, 64) if step == 2)
    assert [g["group"] for g in shard["groups"]] == [0, 1] and all(len(g["completions"]) == 3 for g in shard["groups"])
    first = shard["groups"][0]["completions"][0]
    assert first["records"] and all(r.get("step") == 2 for r in first["records"])
    if method in ("knowrl", "nover"):  # one record per completion: its reward detail, no sentences
        assert first["sentences"] == [] and first["detail"]
        key = "total" if method == "knowrl" else "reward"
        assert first["detail"][key] == pytest.approx(first["reward"], abs=1e-9)
    else:  # three sentences, two inside the think block and one answer, found in the text
        assert len(first["sentences"]) == 3 and all(s["start"] is not None for s in first["sentences"])
        text = first["text"]
        spans = [text[s["start"]:s["end"]] for s in first["sentences"]]
        assert all(span.endswith(".") and span in text for span in spans)


def test_sentence_values_follow_each_methods_reward_unit():
    found, _ = sentences.sentences([
        {"sentence_index": 0, "echo": "A.", "statement": "a1", "verdict": "Correct", "truth": 0.5, "info": 0.1},
        {"sentence_index": 0, "echo": "A.", "statement": "a2", "verdict": "Wrong", "truth": -0.25, "info": 0.1},
        {"sentence_index": 1, "sentence": "B.", "claim": "b", "supported": None, "value": None}])
    # RLFH: the statements' truth rewards summed, the echo's info once; FoRAG's failed claim: no value.
    assert found[0]["value"] == pytest.approx(0.5 - 0.25 + 0.1) and found[0]["verdicts"] == ["Correct", "Wrong"]
    assert found[1]["value"] is None and found[1]["text"] == "B."
    fspo, _ = sentences.sentences([{"sentence_index": 0, "sentence": "C.", "score": 0.9, "step_value": -1,
                                    "factual": False}])
    assert fspo[0]["value"] == -1 and fspo[0]["verdicts"] == ["not factual"]  # step_value, not the NLI score
    located = sentences.locate("x C. y C.", [{"i": 0, "text": "C."}, {"i": 1, "text": "C."}, {"i": 2, "text": "Z"}])
    assert [(s["start"], s["end"]) for s in located] == [(2, 4), (7, 9), (None, None)]
    assert "text" not in located[0] and located[2]["text"] == "Z"  # kept only where the page cannot cut it


def test_nover_records_join_by_order_only_when_the_ids_agree():
    lines = [{"step": 1, "completion": b, "row_id": "q1" if b < 2 else "q2", "text": "t"} for b in range(4)]
    good = [{"step": 1, "question_id": "q1", "reward": 0.1}, {"step": 1, "question_id": "q1", "reward": 0.2},
            {"step": 1, "question_id": "q2", "reward": 0.3}, {"step": 1, "question_id": "q2", "reward": 0.4}]
    _, attached, notes = rollouts.join(lines, good)
    assert notes == [] and [attached[p][0]["reward"] for p in range(4)] == [0.1, 0.2, 0.3, 0.4]
    _, attached, notes = rollouts.join(lines, good[::-1])  # out of order: ids disagree, nothing is guessed
    assert attached == {} and "4 record(s) match no rollout" in notes[0]


def test_records_of_several_processes_join_by_process(tmp_path):
    lines = [{"step": 1, "process": p, "completion": 0, "row_id": f"r{p}", "text": f"p{p}"} for p in (0, 1)]
    records = [{"step": 1, "process": 1, "completion": 0, "sentence_index": 0, "sentence": "p1", "reward": 1.0},
               {"step": 1, "process": 0, "completion": 0, "sentence_index": 0, "sentence": "p0", "reward": -1.0}]
    _, attached, _ = rollouts.join(lines, records)
    assert attached[0][0]["reward"] == -1.0 and attached[1][0]["reward"] == 1.0


def test_an_older_run_renders_and_names_what_it_lacks(tmp_path):
    """No rollouts.jsonl (runs before the engine wrote it), samples without format_ok: the page is
    built from what exists, and the run's notes name each missing file and field."""
    old = eval_samples(10)
    for sample in old:
        sample.pop("format_ok")
    run = make_run_dir(tmp_path / "runs", method="corver", scores={"demo": 0.0}, samples={"demo": old},
                       train_phases={"rollout": 10.0})
    add_training(run, method="corver", steps=2, rollouts=False)
    (run / "train" / "adapter_delta.json").unlink()
    with open(run / "train" / "reward_records.jsonl", "a") as handle:
        handle.write('{"step": 2, "completion": 0, "sente')  # cut by a kill
    files = read(run, ["demo"], trained=True)
    missing = "\n".join(files.missing)
    assert "train/rollouts.jsonl: absent; completions are rebuilt from their scored sentences" in missing
    assert "train/adapter_delta.json: absent" in missing
    assert "train/reward_records.jsonl: 1 line(s) are not JSON objects" in missing
    assert "eval/demo/samples.jsonl: field `format_ok` absent in 10 of 10 lines (shown as —)" in missing
    store = tmp_path / "lb.sqlite"
    record_run(run, store)
    site = tmp_path / "site"
    publish(store, None, site, {})
    (page,) = (site / "viewer" / "runs").glob("*.html")
    html = page.read_text()
    assert "What this run directory lacks" in html and "field `format_ok` absent in 10 of 10 lines" in html
    step = _shard(next((site / "viewer" / "runs").glob("*/steps/1-0.js")))
    rebuilt = step["groups"][0]["completions"][0]
    assert rebuilt["rebuilt"] and rebuilt["sentences"] and "reward" not in rebuilt  # no invented reward


def test_a_run_whose_directory_is_gone_says_so(tmp_path):
    store = tmp_path / "lb.sqlite"
    run = make_run_dir(tmp_path / "runs", method="raw", scores={"demo": 0.0}, samples={"demo": eval_samples(5)})
    record_run(run, store)
    for path in sorted(run.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    run.rmdir()
    publish(store, None, tmp_path / "site", {})
    (page,) = (tmp_path / "site" / "viewer" / "runs").glob("*.html")
    assert "the run directory was not found when publishing" in page.read_text()


def test_samples_carry_strict_verdicts_flags_and_filter_codes():
    rows = eval_samples(6, [True, True, False, False, True, True], answers={1: "wrong1 or gold1", 4: "Not gold4"})
    rows[3].update(answer="", na=True, correct=False)
    probe = {"hedged_gold": "breach"}
    items = [samples.item(s, i, "closed_book", None, probe) for i, s in enumerate(rows)]
    assert items[0]["strict"] is True and items[0]["flags"] == []
    assert items[1]["strict_reason"] == "candidates"
    assert items[1]["flags"] == ["strict v2: candidates", "hedged answer", "probe: the reward pays hedged_gold (breach)"]
    assert [samples.code(e) for e in items] == ["1", "d", "0", "2", "d", "1"]
    assert items[4]["strict_reason"] == "negated"
    collapsed = samples.item({"id": "x", "answer": "Paris", "correct": False, "references": ["Rome"]}, 0, None, "paris",
                             {})
    assert collapsed["flags"] == ["collapsed: the run's most frequent answer"]


def test_side_by_side_aligns_questions_and_codes_each_method():
    raw = [samples.item(s, i, None, None, {}) for i, s in enumerate(eval_samples(3, [True, False, False]))]
    tuned = [samples.item(s, i, None, None, {}) for i, s in enumerate(eval_samples(3, [False, True, False]))]
    questions, codes = samples.side_by_side([("raw", raw), ("corver", tuned[::-1][:2])])  # tuned lacks q0
    assert [q["id"] for q in questions] == ["q0", "q1", "q2"]
    assert codes == "1-,01,00" and questions[0]["answers"][1] is None


def test_publish_pages_samples_and_steps_in_shards(tmp_path):
    store = tmp_path / "lb.sqlite"
    run = make_run_dir(tmp_path / "runs", method="corver", scores={"demo": 0.0},
                       samples={"demo": eval_samples(120)}, train_phases={"rollout": 10.0}, steps=3)
    add_training(run, method="corver", steps=3, questions=3, group_size=4)
    record_run(run, store)
    site = tmp_path / "site"
    manifest = publish(store, None, site, {"viewer": {"page_size": 50, "part_size": 8}})
    (key,) = [p.stem for p in (site / "viewer" / "runs").glob("*.html")]
    index = _shard(site / "viewer" / "runs" / key / "index.js")
    assert [s["step"] for s in index["steps"]] == [1, 2, 3] and all(s["parts"] == 2 for s in index["steps"])
    assert [s["completions"] for s in index["steps"]] == [12, 12, 12]  # parts of whole groups: 8 + 4
    assert sorted(p.name for p in (site / "viewer" / "runs" / key / "samples" / "demo").iterdir()) == ["0.js", "1.js", "2.js"]
    assert len(index["sets"][0]["codes"]) == 120 and index["scale"] == pytest.approx(0.2 * 0.5, rel=0.5)
    assert f"viewer/runs/{key}/steps/3-1.js" in manifest["files"] and manifest["viewer"]["runs"] == 1
    # A republish without the run removes its pages and shards (they are in the manifest).
    other = make_run_dir(tmp_path / "runs", method="raw", scores={"demo": 0.0}, samples={"demo": eval_samples(3)})
    record_run(other, tmp_path / "lb2.sqlite")
    again = publish(tmp_path / "lb2.sqlite", None, site, {})
    assert f"viewer/runs/{key}/steps/3-1.js" in again["removed"] and not (site / "viewer" / "runs" / key / "index.js").exists()
    assert json.loads((site / "manifest.json").read_text())["viewer"]["runs"] == 1


def test_max_steps_keeps_evenly_spaced_steps(tmp_path):
    from factrl.leaderboard.viewer.build import kept_steps

    assert kept_steps(list(range(1, 101)), 5) == {1, 26, 51, 75, 100} and kept_steps([1, 2, 3], 5) == {1, 2, 3}
    assert kept_steps([1, 2, 3], None) == {1, 2, 3} and kept_steps([4, 9], 1) == {9}
    store = tmp_path / "lb.sqlite"
    run = make_run_dir(tmp_path / "runs", method="fspo", scores={"demo": 0.0}, samples={"demo": eval_samples(4)},
                       train_phases={"rollout": 10.0}, steps=6)
    add_training(run, method="fspo", steps=6)
    record_run(run, store)
    publish(store, None, tmp_path / "site", {"viewer": {"max_steps": 3}})
    (key,) = [p.stem for p in (tmp_path / "site" / "viewer" / "runs").glob("*.html")]
    assert [s["step"] for s in _shard(tmp_path / "site" / "viewer" / "runs" / key / "index.js")["steps"]] == [1, 4, 6]
    assert "rollouts of 3 evenly spaced steps shown" in (tmp_path / "site" / "viewer" / "runs" / f"{key}.html").read_text()


def test_a_published_probe_flags_the_samples_whose_trick_the_reward_pays(tmp_path):
    """`publish --probe probe.json` (the grid's publish): a method whose reward the probe found
    paying the hedged gold gets that flag on its hedged samples, another method's do not."""
    from factrl.harness.probe import write_tables

    from tests.probe.test_panel import synthetic

    paid = synthetic(honest_correct=3.0, honest_wrong=0.0, hedged_gold=2.9, refusal=0.0)
    paid.method = "corver"
    safe = synthetic(honest_correct=3.0, honest_wrong=0.0, hedged_gold=-1.0, refusal=0.0)
    safe.method = "fspo"
    store = tmp_path / "lb.sqlite"
    for method in ("corver", "fspo"):
        rows = eval_samples(4, [True, True, False, False], answers={1: "wrong1 or gold1"})
        record_run(make_run_dir(tmp_path / "runs", method=method, scores={"demo": 0.0}, samples={"demo": rows}), store)
    probe = write_tables([paid, safe], tmp_path / "probe")["json"]
    publish(store, None, tmp_path / "site", {"probe": [str(probe)]})
    flags = {}
    for method in ("corver", "fspo"):
        (key,) = [p.stem for p in (tmp_path / "site" / "viewer" / "runs").glob(f"*-{method}-*.html")]
        flags[method] = _shard(tmp_path / "site" / "viewer" / "runs" / key / "samples" / "demo" / "0.js")["items"][1]["flags"]
    assert "probe: the reward pays hedged_gold (breach)" in flags["corver"]
    assert flags["fspo"] == ["strict v2: candidates", "hedged answer"]


def test_publishing_beside_run_directories_never_touches_them(tmp_path):
    """The viewer owns OUT/viewer/ only: a site published into the folder that holds `runs/`
    (the default output_dir) and republished leaves every run file where it was."""
    store = tmp_path / "lb.sqlite"
    run = make_run_dir(tmp_path / "runs", method="corver", scores={"demo": 0.0}, samples={"demo": eval_samples(4)},
                       train_phases={"rollout": 10.0}, steps=2)
    add_training(run, method="corver", steps=2)
    record_run(run, store)
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "runs").rglob("*") if p.is_file())
    publish(store, None, tmp_path, {})
    publish(store, None, tmp_path, {})
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "runs").rglob("*") if p.is_file()) == before
    assert list((tmp_path / "viewer" / "runs").glob("*.html"))

"""judge=reference: reference answers in-process, the same JudgeResults and accounting as a served
judge, recorded as a stand-in; and the judge provenance (paper_model, substitute) of every backend."""
from __future__ import annotations

import dataclasses
import json
import time

import pytest

from factrl.harness.engine.cli import main as cli_main
from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError
from factrl.harness.services.judge import ATOMIC_FACTS, SIMPLEQA_GRADE, JudgeFailuresExceeded, JudgeResult, open_judge
from factrl.harness.services.judge.provenance import is_substitute, substitute, substitute_judges
from factrl.harness.training.components import check_components

REFERENCE = {"backend": "reference"}


def _grades(answers, gold=("Paris", "Paname")):
    return [{"question": "What is the capital of France?", "gold": list(gold), "answer": a} for a in answers]


def test_answers_are_the_reference_answers_with_the_served_judges_shape(tmp_path):
    run = tmp_path / "run"
    with open_judge(REFERENCE, run_dir=run, prompts=[SIMPLEQA_GRADE]) as judge:
        results = judge.ask_many(SIMPLEQA_GRADE, _grades(["It is Paris.", "Lyon", "I don't know", ""]))
        facts = judge.ask(ATOMIC_FACTS, {"text": "Paris is the capital of France. Perhaps."})
        stats, entry = judge.stats(), judge.describe()
    assert results == [JudgeResult("CORRECT", True), JudgeResult("INCORRECT", True),
                       JudgeResult("NOT_ATTEMPTED", True), JudgeResult("NOT_ATTEMPTED", True)]
    assert facts == JudgeResult(["Paris is the capital of France"], True)
    assert stats["items"] == 5 and stats["calls"] == 0 and stats["input_tokens"] == 0 and stats["failures"] == 0
    assert (entry["kind"], entry["backend"], entry["stand_in"], entry["served_model"]) == ("judge", "reference", True,
                                                                                          "reference")
    assert entry["substitute"] is True and entry["note"] and entry["reply_mode"] == "reference"
    assert entry["prompts"] == {"atomic_facts": {"version": "2", "source": ATOMIC_FACTS.source,
                                                 "reply_mode": "reference"},
                                "simpleqa_grade": {"version": "2", "source": SIMPLEQA_GRADE.source,
                                                   "reply_mode": "reference"}}
    assert set(entry["tools"]) == {"scorer", "claims", "nli_standin"}
    check_components("knowrl", {"judge": entry})  # a valid component entry
    doc = json.loads((run / "judge_stats.json").read_text())
    assert doc["judge"]["backend"] == "reference" and doc["totals"]["items"] == 5
    with pytest.raises(KeyError, match="answer"):  # a malformed item raises as with a served judge
        with open_judge(REFERENCE) as judge:
            judge.ask(SIMPLEQA_GRADE, {"question": "q", "gold": "g"})


def test_a_prompt_without_a_reference_answer(tmp_path):
    bare = dataclasses.replace(SIMPLEQA_GRADE, name="bare", reference=None)
    with pytest.raises(ConfigError, match=r"^judge=reference has no reference answer for prompt\(s\) bare; use "
                                          r"judge=embedded or judge=openai"):
        open_judge(REFERENCE, prompts=[SIMPLEQA_GRADE, bare])  # refused before any work
    with open_judge(REFERENCE, run_dir=tmp_path) as judge:  # asked without registering: its items fail
        results = judge.ask_many(bare, _grades(["Paris", "Lyon"]))
        assert [(r.ok, r.error) for r in results] == [(False, "no reference answer for prompt bare")] * 2
        assert judge.stats()["failures"] == 2
        with pytest.raises(JudgeFailuresExceeded, match="no reference answer for prompt bare"):
            judge.check_failed_share(results)  # max_failed_share 0: a deterministic judge's failure stops the run


def test_a_reference_answer_that_raises_fails_its_item_only():
    def picky(item, tools):
        if item["answer"] == "boom":
            raise ValueError("cannot grade this")
        return "CORRECT"

    odd = dataclasses.replace(SIMPLEQA_GRADE, name="odd", reference=picky)
    with open_judge(REFERENCE) as judge:
        ok, bad = judge.ask_many(odd, _grades(["Paris", "boom"]))
    assert ok.ok and not bad.ok and bad.value is None
    assert bad.error == "reference answer of odd failed: ValueError: cannot grade this"


def test_tools_reach_the_runs_evidence_store():
    store = object()
    seen = []
    probe = dataclasses.replace(ATOMIC_FACTS, name="probe", reference=lambda item, tools: seen.append(tools.evidence))
    with open_judge(REFERENCE, evidence=store) as judge:
        judge.ask(probe, {"text": "x"})
    assert seen == [store]


def test_the_backend_costs_next_to_nothing():
    items = _grades([f"Paris {i}" if i % 2 else f"Lyon {i}" for i in range(2000)])
    texts = [{"text": f"Paris is the capital of France. Lyon had {i} people in 1999."} for i in range(500)]
    with open_judge(REFERENCE) as judge:
        started = time.perf_counter()
        judge.ask_many(SIMPLEQA_GRADE, items)
        judge.ask_many(ATOMIC_FACTS, texts)
        elapsed = time.perf_counter() - started
    assert elapsed < 2.0, elapsed  # ~0.1 s on the shared 2-core machine: 2,500 items


def test_cli_ask_and_check_work_with_the_reference_judge(capsys):
    item = json.dumps({"question": "Capital of France?", "gold": "Paris", "answer": "Paris, surely"})
    assert cli_main(["judge", "ask", "simpleqa_grade", item, "judge=reference"]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "value": "CORRECT", "error": None, "cached": False,
                                                   "attempts": 0, "reasks": 0}
    assert cli_main(["judge", "ask", "factrl.harness.services.judge.prompts:ATOMIC_FACTS", '{"text": "Rome is in Italy."}',
                     "judge=reference"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == ["Rome is in Italy"]
    assert cli_main(["judge", "check", "judge=reference"]) == 0
    assert capsys.readouterr().out.strip() == "judge ok: reference at in-process"
    assert cli_main(["judge", "serve", "judge=reference"]) == 2
    assert "judge=reference answers in-process: there is no server" in capsys.readouterr().err
    assert cli_main(["judge", "ask", "factrl.harness.services.judge.prompts:GRADES", "{}", "judge=reference"]) == 2
    assert "module:NAME of a JudgePrompt" in capsys.readouterr().err


def test_reference_settings_accept_the_served_judges_keys_and_check_their_own():
    from factrl.harness.services.judge import read_settings

    settings = read_settings({"backend": "reference", "max_tokens_cap": 48, "max_reasks": 0, "temperature": 0.7})
    assert settings.backend == "reference" and settings.max_failed_share == 0.0
    with pytest.raises(ConfigError, match=r"^judge.stand_in=false: the reference judge is always a stand-in"):
        read_settings({"backend": "reference", "stand_in": False})
    with pytest.raises(ConfigError, match=r"judge.max_failed_shar: unknown key \(did you mean judge.max_failed_share"):
        read_settings({"backend": "reference", "max_failed_shar": 0.5})


# --- provenance ----------------------------------------------------------------------------------

@pytest.mark.parametrize("served, paper, stand_in, expected", [
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18", False, False),
    ("Qwen/Qwen2.5-72B-Instruct", "gpt-4o-mini-2024-07-18", False, True),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18", True, True),  # judge.stand_in: said to replace it
    ("any-model", None, False, None),  # the paper names no judge: unknown
    ("reference", None, True, True),
])
def test_substitute_rule(served, paper, stand_in, expected):
    assert substitute(served_model=served, paper_model=paper, stand_in=stand_in) is expected


def test_tables_can_tell_a_substitute_judge_from_the_components():
    components = {"judge": {"kind": "judge", "substitute": True}, "nli": {"kind": "nli", "substitute": True},
                  "grader": {"kind": "judge", "substitute": False}}
    assert substitute_judges(components) == ["judge"] and is_substitute(components)
    assert not is_substitute({"grader": {"kind": "judge", "substitute": None}}) and not is_substitute(None)


def test_methods_name_their_papers_judge_and_served_judges_are_compared_with_it():
    assert compose(["method=knowrl"]).judge.paper_model == "gpt-4o-mini-2024-07-18"
    assert compose(["method=rlfh"]).judge.paper_model == "Qwen/Qwen3.8-Flash-Next-FP8"
    assert compose(["method=forag"]).judge.paper_model is None  # the paper names none
    assert compose(["method=corver"]).judge.paper_model is None
    assert compose(["method=knowrl"]).judge.backend == "reference"  # the embedded models' default
    cfg = compose(["method=knowrl", "model=llama-3.2-3b", "judge=openai", "judge.base_url=http://127.0.0.1:1/v1",
                   "judge.model=gpt-4o-mini-2024-07-18"])
    with open_judge(cfg.judge, check=False) as judge:
        assert (judge.describe()["paper_model"], judge.describe()["substitute"]) == ("gpt-4o-mini-2024-07-18", False)
    cfg.judge.model = "Qwen/Qwen2.5-7B-Instruct"
    with open_judge(cfg.judge, check=False) as judge:
        assert judge.describe()["substitute"] is True and judge.describe()["stand_in"] is False
    with open_judge(compose(["method=knowrl"]).judge) as judge:
        assert judge.describe()["paper_model"] == "gpt-4o-mini-2024-07-18" and judge.describe()["substitute"]

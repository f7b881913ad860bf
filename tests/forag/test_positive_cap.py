"""FoRAG's `positive_cap: answer` (methods/forag/guards.py): FoRAG has no correctness term, so a
supported sub-claim pays whatever the answer. With the cap, a completion whose answer strict
accuracy does not credit earns no positive value, and its statements of that answer are
unsupported whatever the judge says: the row's own evidence before a wrong answer, and a judge
that obeys an instruction inside the material (tests/judge/obeying_server.py, inside=True),
pay a wrong answer no more than the honest wrong answer. The careful grader serves over HTTP."""
from __future__ import annotations

import pytest

from factrl.harness.services.judge import open_judge
from factrl.harness.probe import panel
from factrl.methods.forag import FoRAGReward, FoRAGSettings
from tests.judge.obeying_server import ObeyingJudge

from .careful_judge import careful, obey_verify
from .conftest import ROWS, judge_cfg
from .test_reward import encode

GUARDS = {"dedupe_statements": True, "max_rewarded_statements": 16}
NAMES = (panel.HONEST_CORRECT, panel.HONEST_WRONG, "evidence_restated", "evidence_reworded", "judge_instruction",
         "gold_in_reasoning", "gold_reasoning_wrong_answer")


def returns(server, tokenizer, store, **settings) -> dict[str, float]:
    rows = [ROWS["curie"], ROWS["einstein"]]
    entries = {e.name: e for e in panel.entries()}
    evidence = [("Marie Curie was born in Warsaw.", "Marie Curie won two Nobel Prizes."),
                ("Albert Einstein was born in Ulm in 1879.",)]
    texts = [(name, panel.completion_text(*entries[name].build(q)), row)
             for name in NAMES for q, row in zip(panel.questions(rows, evidence), rows)]
    with open_judge(judge_cfg(server.url, cache=None)) as judge:
        reward = FoRAGReward(tokenizer=tokenizer, judge=judge, store=store, k=3,
                             settings=FoRAGSettings.from_mapping(**settings))
        out = reward(completions=[t for _, t, _ in texts], completion_ids=encode(tokenizer, [t for _, t, _ in texts]),
                     rows=[r for _, _, r in texts])
    assert None not in out.token_returns
    means: dict[str, list[float]] = {}
    for (name, _, _), rewards in zip(texts, out.token_returns):
        means.setdefault(name, []).append(sum(rewards))
    return {name: sum(v) / len(v) for name, v in means.items()}


@pytest.mark.parametrize("inside", [False, True])
def test_a_wrong_answer_earns_nothing_above_the_honest_wrong_answer(store, tokenizer, inside):
    with ObeyingJudge(careful, obey_verify, inside=inside) as server:
        guarded = returns(server, tokenizer, store, **GUARDS)
        capped = returns(server, tokenizer, store, **GUARDS, positive_cap="answer")
        obeyed = len(server.obeyed)
    correct, wrong = capped[panel.HONEST_CORRECT], capped[panel.HONEST_WRONG]
    assert (correct, wrong) == pytest.approx((guarded[panel.HONEST_CORRECT], guarded[panel.HONEST_WRONG]))
    if inside:  # the weak judge obeys the instruction in the material: the wrong answer is "supported"
        assert obeyed and guarded["judge_instruction"] > guarded[panel.HONEST_WRONG]
    for name in NAMES[2:]:  # no positive value: a refusal's 0, a wrong answer's own cost
        floor = 0.0 if name == "gold_in_reasoning" else wrong
        assert capped[name] <= floor + 1e-9 < correct, name
        assert capped[name] <= guarded[name] + 1e-9, name  # a guard never raises a return


def test_a_named_checked_option_recorded_as_a_guard():
    settings = FoRAGSettings.from_mapping(positive_cap="answer")
    assert settings.guarded and settings.guards == ["positive_cap=answer"]
    assert FoRAGSettings.from_mapping().positive_cap == "none"
    with pytest.raises(ValueError, match=r"positive_cap='all': choose one of none, answer"):
        FoRAGSettings.from_mapping(positive_cap="all")

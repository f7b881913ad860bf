"""The panel's completions, what a reward receives from the probe (a plugin-style method that
records its inputs, on SmolLM2's real tokenizer and prompt prefix), and the verdict rule."""
from __future__ import annotations

import pytest

from factrl.harness.core.answers import extract_answer, match_closed_book
from factrl.harness.engine.config import compose
from factrl.harness.core.method import Method, RewardOutput
from factrl.harness.probe import entry_names, probe_method
from factrl.harness.probe.panel import PROTOCOL_CREDITED, by_name, completion_text, entries, questions
from factrl.harness.probe.runner import ProbeResult, TypeStats

from .conftest import POOL

V1 = ["honest_correct", "honest_wrong", "hedged_gold", "irrelevant_padding", "question_restated",
      "repeated_sentences", "overlong_reasoning", "empty_think", "refusal", "judge_instruction", "gold_wrong_reasoning"]
V2 = ["negated_gold", "retracted_gold", "blocks_wrong_gold", "blocks_gold_wrong", "gold_in_reasoning",
      "gold_reasoning_wrong_answer", "evidence_restated", "evidence_repeated", "evidence_in_answer"]
V4 = ["evidence_reworded"]
V5 = ["gold_named_rejected", "gold_listed_with_and", "gold_in_longer_name", "gold_fragment"]
V6 = ["abstain_appended", "stated_correct_certain", "stated_wrong_certain", "stated_wrong_unsure", "stated_refusal_unsure",
      "stated_hedged_certain"]
V7 = ["answer_doubled"]
EVIDENCE = [("Paris is the capital and largest city of France.", "It lies on the Seine."), (), (), (), ()]


def test_panel_v2_keeps_v1_and_adds_the_classes_in_the_rewards_format():
    from factrl.harness.core.answers import strict_correct
    from factrl.harness.probe import PANEL_VERSION

    assert PANEL_VERSION == "7" and entry_names() == V1 + V2 + V4 + V5 + V6 + V7  # v3: one baseline moved; v4-v7: added
    assert by_name()["gold_in_reasoning"].baseline == "refusal"
    assert by_name()["evidence_reworded"].baseline == "evidence_restated"
    assert by_name()["answer_doubled"].baseline == "honest_correct"  # a correct answer paid above the honest one
    for q, row in zip(questions(POOL, EVIDENCE), POOL):
        assert not match_closed_book(q.wrong, row["answers"])  # another question's gold, never this one's
        for e in entries():
            reasoning, answer = e.build(q)
            text = completion_text(reasoning, answer, confidence=e.confidence)
            blocks = [answer] if isinstance(answer, str) else list(answer)
            got = extract_answer(text)
            assert got.has_answer_block and got.closed and got.answer == blocks[-1]  # the protocol reads the last
            if e.answer == "evidence":  # credited wherever the pasted evidence states the gold
                assert match_closed_book(got.answer, row["answers"]) == (row["id"] == "p1"), e.name
                continue
            correct = match_closed_book(got.answer, row["answers"])
            if e.answer == "fragment":  # part of a multi-word gold where the row has one (v5)
                assert correct == bool(q.fragment) and strict_correct(text, row["answers"]).reason in (
                    "fragment" if q.fragment else "no_match",), e.name
                continue
            assert correct == (e.answer in PROTOCOL_CREDITED), e.name
            # the gaming answers the protocol credits are exactly those strict accuracy refuses
            assert strict_correct(text, row["answers"]).correct == (e.answer == "gold"), e.name
            if e.name == "blocks_gold_wrong":
                assert match_closed_book(extract_answer(text, block="first").answer, row["answers"])
    paris = questions(POOL, EVIDENCE)[0]
    restated, repeated = (completion_text(*e.build(paris)) for e in entries() if e.uses_evidence and
                          e.name in ("evidence_restated", "evidence_repeated"))
    assert "Paris is the capital and largest city of France. It lies on the Seine." in restated
    assert repeated.count("It lies on the Seine.") == 10
    assert [e.baseline for e in entries() if e.name == "evidence_repeated"] == ["evidence_restated"]


def test_response_prefix_is_not_repeated():
    assert completion_text("r", "a", prefix="<think>") == "r</think><answer>a</answer>"
    assert completion_text("r", "a") == "<think>r</think><answer>a</answer>"


class Recorder(Method):
    """A plugin-style method: reward = +1 per token when the answer block holds the gold, else -1."""

    name = "recorder"
    algorithm = "grpo"
    description = "records what the probe hands its reward"

    def build_reward(self, ctx):
        self.calls = []
        ctx.on_close(lambda: setattr(self, "closed", True))

        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            self.calls.append((prompts, completions, completion_ids, rows))
            values = [1.0 if match_closed_book(extract_answer("<think>" + c).answer, r["answers"]) else -1.0
                      for c, r in zip(completions, rows)]
            return RewardOutput([[v] * len(ids) for v, ids in zip(values, completion_ids)])
        return reward


@pytest.fixture(scope="module")
def smol():
    from factrl.harness.services import models

    cfg = compose(["model=smollm2-135m"])
    return cfg, models.load_tokenizer(models.resolve(cfg.model), cfg.model)


def test_reward_sees_what_training_hands_it(smol):
    cfg, tok = smol
    method = Recorder()
    result = probe_method(cfg, rows=POOL, n=2, tokenizer=tok, method=method, batch_size=9)
    prompts, completions, ids, rows = [sum((c[i] for c in method.calls), []) for i in range(4)]
    # 32 entries per row in whole groups of G = 4 (smollm2's train.completions_per_question): 8 groups
    # per row, none needing a filler (v7); two groups (8 completions) per call of at most 9
    assert cfg.train.completions_per_question == 4 and len(V1 + V2 + V4 + V5 + V6 + V7) == 32
    assert len(completions) == 2 * 32 and [len(c[1]) for c in method.calls] == [8] * 8
    for call in method.calls:
        group_rows = [r["id"] for r in call[3]]
        assert all(len(set(group_rows[g:g + 4])) == 1 for g in range(0, len(group_rows), 4))  # one row per group
    assert method.closed  # the method's cleanups ran
    assert all(not c.startswith("<think>") for c in completions)  # SmolLM2's prompt ends with "<think>"
    assert all(p.endswith("<think>") and row["question"] in p for p, row in zip(prompts, rows))
    for text, token_ids in zip(completions, ids):
        assert token_ids == tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert result.stats["honest_correct"].mean == 1.0 and result.stats["honest_wrong"].mean == -1.0
    assert result.verdict("hedged_gold") == "breach" and result.verdict("refusal") == "ok"
    assert result.questions == 2 and result.model == "smollm2-135m"


def synthetic(**means):
    stats = {k: TypeStats(v, 0.1 if v is not None else None, 3 if v is not None else 0, 0 if v is not None else 3)
             for k, v in means.items()}
    return ProbeResult("m", "1", "grpo", "x", "2", 3, stats)


def test_verdicts():
    r = synthetic(honest_correct=3.0, honest_wrong=0.0, a=2.86, b=2.84, c=0.01, d=0.0, e=-1.0, f=None)
    assert r.verdicts() == {"honest_correct": "reference", "honest_wrong": "reference", "a": "breach", "b": "hack",
                            "c": "hack", "d": "ok", "e": "ok", "f": "no_signal"}
    assert r.position("a") == pytest.approx(2.86 / 3)
    broken = synthetic(honest_correct=0.0, honest_wrong=0.0, a=0.0, b=1.0)
    assert broken.verdict("a") == "ordering_broken" and broken.position("a") is None
    assert broken.verdict("b") == "breach"  # no correct - wrong gap, yet it pays more than the honest correct answer


def test_a_reward_that_reads_a_stated_confidence_is_framed_by_the_stated_references():
    """v6: a reward that gives the plain references no signal (RLCR without a stated confidence) is
    judged against the answers stated certain; a reward that scores the plain ones keeps them."""
    r = synthetic(honest_correct=None, honest_wrong=None, stated_correct_certain=1.5, stated_wrong_certain=0.5,
                  stated_wrong_unsure=1.0, stated_refusal_unsure=1.0, stated_hedged_certain=1.5, refusal=None)
    assert r.references() == ("stated_correct_certain", "stated_wrong_certain")
    assert r.verdict("stated_correct_certain") == "reference" and r.verdict("honest_correct") == "reference"
    assert r.verdict("stated_wrong_unsure") == "hack" and r.position("stated_wrong_unsure") == pytest.approx(0.5)
    assert r.verdict("stated_hedged_certain") == "breach" and r.verdict("refusal") == "no_signal"
    plain = synthetic(honest_correct=1.0, honest_wrong=-1.0, stated_correct_certain=1.0, stated_wrong_certain=-1.0,
                      stated_wrong_unsure=-1.0)
    assert plain.references() == ("honest_correct", "honest_wrong")
    assert plain.verdict("stated_correct_certain") == "reference"  # the honest answers with a confidence appended
    assert plain.verdict("stated_wrong_unsure") == "ok"


def test_a_repetition_is_judged_against_its_baseline():
    r = synthetic(honest_correct=2.0, honest_wrong=0.0, evidence_restated=1.0, evidence_repeated=1.0)
    assert r.verdict("evidence_restated") == "hack" and r.verdict("evidence_repeated") == "ok"
    r = synthetic(honest_correct=2.0, honest_wrong=0.0, evidence_restated=1.0, evidence_repeated=3.0)
    assert r.verdict("evidence_repeated") == "breach" and r.baseline("evidence_repeated") == "evidence_restated"
    r = synthetic(honest_correct=2.0, honest_wrong=0.0, evidence_restated=None, evidence_repeated=0.5)
    assert r.verdict("evidence_repeated") == "hack"  # no baseline signal: the honest wrong answer

"""The panel's completions, what a reward receives from the probe (a plugin-style method that
records its inputs, on SmolLM2's real tokenizer and prompt prefix), and the verdict rule."""
from __future__ import annotations

import pytest

from factrl.evals.answers import extract_answer, match_closed_book
from factrl.harness.config import compose
from factrl.harness.method import Method, RewardOutput
from factrl.harness.probe import entry_names, probe_method
from factrl.harness.probe.panel import completion_text, entries, questions
from factrl.harness.probe.runner import ProbeResult, TypeStats

from .conftest import POOL

ISSUE_LIST = ["honest_correct", "honest_wrong", "hedged_gold", "irrelevant_padding", "question_restated",
              "repeated_sentences", "overlong_reasoning", "empty_think", "refusal", "judge_instruction",
              "gold_wrong_reasoning"]


def test_panel_is_the_issues_list_in_the_rewards_format():
    assert entry_names() == ISSUE_LIST
    for q, row in zip(questions(POOL), POOL):
        assert not match_closed_book(q.wrong, row["answers"])  # another question's gold, never this one's
        for e in entries():
            reasoning, answer = e.build(q)
            text = completion_text(reasoning, answer)
            got = extract_answer(text)
            assert got.has_answer_block and got.closed and got.answer == answer
            correct = match_closed_book(answer, row["answers"])
            assert correct == (e.answer in ("gold", "hedged")), e.name


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
    from factrl.harness import models

    cfg = compose(["model=smollm2-135m"])
    return cfg, models.load_tokenizer(models.resolve(cfg.model), cfg.model)


def test_reward_sees_what_training_hands_it(smol):
    cfg, tok = smol
    method = Recorder()
    result = probe_method(cfg, rows=POOL, n=2, tokenizer=tok, method=method, batch_size=5)
    prompts, completions, ids, rows = [sum((c[i] for c in method.calls), []) for i in range(4)]
    assert len(completions) == 2 * len(ISSUE_LIST) and len(method.calls) == 5  # 22 completions in batches of 5
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
    return ProbeResult("m", "1", "grpo", "x", "1", 3, stats)


def test_verdicts():
    r = synthetic(honest_correct=3.0, honest_wrong=0.0, a=2.86, b=2.84, c=0.01, d=0.0, e=-1.0, f=None)
    assert r.verdicts() == {"honest_correct": "reference", "honest_wrong": "reference", "a": "breach", "b": "hack",
                            "c": "hack", "d": "ok", "e": "ok", "f": "no_signal"}
    assert r.position("a") == pytest.approx(2.86 / 3)
    broken = synthetic(honest_correct=0.0, honest_wrong=0.0, a=1.0)
    assert broken.verdict("a") == "ordering_broken" and broken.position("a") is None

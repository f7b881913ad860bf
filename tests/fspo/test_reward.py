"""FSPO reward and advantage arithmetic on hand-made cases (docs/BASELINES.md §2.2): the sign-flip
rule (mask 0 never flips, A = 0 stays 0, answer tokens +|A|), the step-reward variant, the
format rule, and one batched NLI call per step. Real parts: the Llama-2 tokenizer, the core
alignment and group advantages, a real SQLite evidence store and the lexical NLI stand-in."""
from __future__ import annotations

import pytest
import torch

from factrl.harness.core import completions as comp
from factrl.harness.services.nli import load_nli
from factrl.harness.training.advantages import token_advantages
from factrl.methods.fspo import FSPO, FSPOSettings, format_ok, reward_from_config
from factrl.methods.fspo.advantage import factuality_mask, flip_advantages, step_returns
from tests.fspo.conftest import row

FACT = "Paris is the capital of France."  # every claim in the Paris passage: stand-in score 1.0
FALSE = "Mozart lived in Tokyo in 1790."  # nothing in the passage, and a number it lacks: 0.0


def test_flip_rule_by_hand():
    advantages = torch.tensor([[2.0] * 5, [-1.0] * 5, [0.0] * 5, [-3.0] * 5])
    masks = torch.tensor([[1, -1, 0, 1, 0], [1, -1, 0, 1, 0], [1, -1, 0, 1, 0], [0, 0, 0, 0, 0]])
    flipped = flip_advantages(advantages, masks)
    assert flipped.tolist() == [[2, -2, 2, 2, 2],      # A > 0: -1 flips to -|A|, 0 keeps A
                                [1, -1, -1, 1, -1],    # A < 0: +1 gives +|A|, -1 and 0 keep A
                                [0, 0, 0, 0, 0],       # A = 0 stays 0 (a tied group teaches nothing)
                                [-3, -3, -3, -3, -3]]  # mask 0 (no step signal) never flips
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        flip_advantages(advantages, masks[:, :2])


def test_mask_is_plus_one_off_the_scored_sentences():
    sigma = [None, 0, 0, None, 1, 1, 2, None]  # tags, sentence 0, sentence 1, answer sentence 2, EOS
    assert factuality_mask(sigma, {0: 1, 1: -1}) == [1, 1, 1, 1, -1, -1, 1, 1]
    assert step_returns(sigma, 1.0, {0: 1, 1: -1}, 0.5) == [1.0, 1.5, 1.5, 1.0, 0.5, 0.5, 1.0, 1.0]
    assert step_returns(sigma, -2.0, None, 1.0) == [-2.0] * 8


@pytest.mark.parametrize("text, ok", [
    (f"<think>{FACT}</think><answer>Paris</answer>", True),
    (f"<THINK>{FACT}</THINK> <answer>Paris</answer>", True),   # tags read case-insensitively
    (f"<think>{FACT}</think>Paris", False),                     # no answer block
    (f"<think>{FACT}</think><answer>Paris</answer><answer>Lyon</answer>", False),  # two answers
    (f"<answer>Paris</answer><think>{FACT}</think>", False),    # out of order
    ("<think><think>x</think></think><answer>Paris</answer>", False),
])
def test_format_rule(text, ok):
    assert format_ok(text) is ok


def _batch(tokenizer):
    """Two groups of G = 3. Group 1 (title Paris): correct [fact, false], wrong [fact, false],
    correct [fact]. Group 2 (no title): correct, untagged (format failure), wrong."""
    texts = [f"<think>{FACT} {FALSE}</think><answer>Paris</answer>",
             f"<think>{FACT} {FALSE}</think><answer>Lyon</answer>",
             f"<think>{FACT}</think><answer>Paris</answer>",
             f"<think>{FACT}</think><answer>Paris</answer>",
             "Paris",
             f"<think>{FACT}</think><answer>Lyon</answer>"]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
    rows = [row("Paris")] * 3 + [row("", row_id="2")] * 3
    return texts, ids, rows


def _reward(tokenizer, store, **settings):
    method_cfg = {"name": "fspo", "nli": {"backend": "standin"}, **settings}
    return reward_from_config(method_cfg, tokenizer=tokenizer, store=store)


def _sentence_tokens(tokenizer, ids, text):
    """Token positions of the sentence whose text is `text` (the core's own alignment)."""
    alignment = comp.align(tokenizer, ids)
    index = next(s.index for s in alignment.sentences if s.text == text)
    return [t for t, s in enumerate(alignment.sigma) if s == index]


def test_sign_flip_through_the_group_advantages(llama_tokenizer, store):
    texts, ids, rows = _batch(llama_tokenizer)
    reward = _reward(llama_tokenizer, store)
    out = reward(prompts=[""] * 6, completions=texts, completion_ids=ids, rows=rows)
    # Answer score broadcast to every token (format failure: 0, as released): one A_i per completion.
    assert [set(r) for r in out.token_returns] == [{1.0}, {0.0}, {1.0}, {1.0}, {0.0}, {0.0}]
    assert [e["status"] for e in out.extras] == ["ok", "ok", "ok", "no_title", "format", "no_title"]
    width = max(len(i) for i in ids)
    advantages, _ = token_advantages(out.token_returns, 3, width=width)
    a = advantages[:, 0].tolist()
    assert a[0] > 0 and a[1] < 0 and a[4] < 0
    mask = torch.zeros(6, width)
    for b, i in enumerate(ids):
        mask[b, :len(i)] = 1
    method = FSPO({"name": "fspo"})
    shaped = method.shape_advantages(advantages, output=out, mask=mask, group_size=3)
    for b in range(3):  # group 1: sign from factuality, magnitude |A_i|
        false = set(_sentence_tokens(llama_tokenizer, ids[b], FALSE)) if FALSE in texts[b] else set()
        expected = [(-abs(a[b]) if t in false else abs(a[b])) for t in range(len(ids[b]))]
        assert shaped[b, :len(ids[b])].tolist() == pytest.approx(expected), b
        assert shaped[b, len(ids[b]):].abs().sum() == 0  # padding stays 0
    # The wrong answer's factual sentence, tags, answer tokens and EOS get +|A| although A < 0.
    assert shaped[1, len(ids[1]) - 1].item() == pytest.approx(abs(a[1]))
    # Group 2 has no evidence (no title): mask 0 everywhere, so the advantages are untouched.
    assert torch.equal(shaped[3:], advantages[3:])
    d = out.diagnostics
    assert d["no_title"] == 3 and d["format_failures"] == 1 and d["sentences"] == 5
    assert d["factual_rate"] == pytest.approx(3 / 5) and d["nli_calls"] == 1 and d["nli_pairs"] == 2
    assert [(r["completion"], r["factual"]) for r in out.records] == [(0, True), (0, False), (1, True), (1, False),
                                                                       (2, True)]
    # The engine writes each record as {"step": <training step>, **record}: no key may shadow it.
    assert all("step" not in r for r in out.records) and out.records[1]["step_value"] == -1


def test_one_batched_nli_call_per_step(llama_tokenizer, store):
    texts, ids, rows = _batch(llama_tokenizer)
    reward = _reward(llama_tokenizer, store)
    reward(completions=texts, completion_ids=ids, rows=rows)
    # Five sentences, two distinct (premise, sentence) pairs, one score() call.
    assert reward.nli.stats()["calls"] == 1 and reward.nli.stats()["pairs"] == 2


def test_step_reward_variant(llama_tokenizer, store):
    texts, ids, rows = _batch(llama_tokenizer)
    reward = _reward(llama_tokenizer, store, variant="step_reward", step_weight=1.0)
    out = reward(completions=texts, completion_ids=ids, rows=rows)
    fact = set(_sentence_tokens(llama_tokenizer, ids[0], FACT))
    false = set(_sentence_tokens(llama_tokenizer, ids[0], FALSE))
    expected = [2.0 if t in fact else (0.0 if t in false else 1.0) for t in range(len(ids[0]))]
    assert out.token_returns[0] == expected  # answer 1 + s(t): +1 factual, -1 not, 0 elsewhere
    wrong_fact = set(_sentence_tokens(llama_tokenizer, ids[1], FACT))
    assert {out.token_returns[1][t] for t in wrong_fact} == {1.0}  # answer 0 + 1
    assert out.token_returns[4] == [0.0] * len(ids[4])  # format failure: 0 (format_penalty), no step values
    assert out.token_returns[3] == [1.0] * len(ids[3])  # no title: answer score only
    # The returns carry the step values; the advantage hook leaves the core's advantages alone.
    method = FSPO({"name": "fspo", "variant": "step_reward"})
    advantages, _ = token_advantages(out.token_returns, 3, width=max(map(len, ids)))
    assert method.shape_advantages(advantages, output=out, mask=None, group_size=3) is advantages


def test_a_format_penalty_is_a_named_option(llama_tokenizer, store):
    """The released reward of a format failure is its answer score, 0; a penalty (e.g. the -2
    that hotpot.py only logs) is an option of our own, recorded in the settings component."""
    texts, ids, rows = _batch(llama_tokenizer)
    shaped = _reward(llama_tokenizer, store, format_penalty=-2.0)
    out = shaped(completions=texts, completion_ids=ids, rows=rows)
    assert set(out.token_returns[4]) == {-2.0} and out.extras[4]["status"] == "format"
    assert out.diagnostics["reward_mean"] == pytest.approx((1 + 0 + 1 + 1 - 2 + 0) / 6)
    from factrl.methods.fspo import settings_component

    differences = {d["setting"] for d in settings_component(shaped, {})["differences"]}
    assert "format_penalty" in differences
    assert "format_penalty" not in {d["setting"] for d in settings_component(_reward(llama_tokenizer, store),
                                                                              {})["differences"]}


def test_step_values_and_neutral_band():
    binary = FSPOSettings.from_mapping()
    assert [binary.step(x) for x in (0.2, 0.5, 0.51)] == [-1, -1, 1]  # strict > 0.5, no neutral
    banded = FSPOSettings.from_mapping(variant="step_reward", neutral_band=(0.3, 0.7))
    assert [banded.step(x) for x in (0.1, 0.3, 0.5, 0.7, 0.9)] == [-1, 0, 0, 0, 1]


def test_response_prefix_counts_for_the_format(llama_tokenizer, store):
    """A model whose prompt ends in `<think>` writes the rest: the format rule reads both."""
    text = f"{FACT}</think><answer>Paris</answer>"
    ids = [llama_tokenizer(text, add_special_tokens=False)["input_ids"]]
    plain = _reward(llama_tokenizer, store)(completions=[text], completion_ids=ids, rows=[row()])
    prefixed = reward_from_config({"nli": {"backend": "standin"}}, tokenizer=llama_tokenizer, store=store,
                                  prefix="<think>")(completions=[text], completion_ids=ids, rows=[row()])
    assert plain.extras[0]["status"] == "format" and prefixed.extras[0]["status"] == "ok"
    assert prefixed.records[0]["sentence"] == FACT and prefixed.records[0]["factual"]


def test_evidence_is_the_rows_articles_ranked_by_the_question(llama_tokenizer, store):
    reward = _reward(llama_tokenizer, store)
    premise = reward.premise(row("Paris;Eiffel Tower"))
    assert premise.status == "ok" and premise.passages == 2
    assert "capital and largest city of France" in premise.text and "1889" in premise.text
    assert reward.premise(row("No Such Article Anywhere")).status == "no_evidence"
    assert reward.premise(row("")).status == "no_title"
    assert load_nli(None).describe()["stand_in"] is True

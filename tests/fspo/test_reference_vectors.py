"""FSPO against vectors recorded by running the released code (nusnlp/FSPO @7f5e4f9,
tests/reference_vectors/fspo/): the group advantage and sign flip through the harness's path
with FSPO's composed training settings, the reward of a format failure (0), the total = answer
score rule, and the reward worker end to end, where the release's mask layout (from response
position 0) is the one named difference (README "Fidelity")."""
from __future__ import annotations

import json

import pytest
import torch

from factrl.harness.core.method import RewardOutput
from factrl.harness.training.distributed import global_token_advantages
from factrl.methods.fspo import FSPO, reward_from_config
from tests import refvec

TOL = dict(rel=1e-6, abs=1e-6)  # the release computed in float32, as the harness does


@pytest.fixture(scope="module")
def fspo_train():
    """train.* of `method=fspo` as the harness composes it (configs/protocol/method/fspo.yaml)."""
    from factrl.harness.engine.config import compose

    return compose(["method=fspo"]).train


def harness_advantages(train, token_returns, masks, group, width):
    """Group advantages (the trainer's call, with FSPO's eps / floor / scaling), then FSPO's
    shape_advantages, then padding zeroed as TokenGRPOTrainer._shape does."""
    advantages, _ = global_token_advantages(token_returns, group, width=width, eps=float(train.advantage_epsilon),
                                            std_floor=float(train.advantage_std_floor),
                                            scale=str(train.scale_rewards))
    completion_mask = torch.zeros(len(token_returns), width)
    for b, r in enumerate(token_returns):
        completion_mask[b, :len(r)] = 1
    output = RewardOutput(token_returns, {}, [], extras=[{"mask": m} for m in masks])
    shaped = FSPO({"name": "fspo"}).shape_advantages(advantages, output=output, mask=completion_mask,
                                                      group_size=group)
    return shaped * completion_mask


def test_fspo_composes_the_released_advantage_settings(fspo_train):
    # core_algos.py:114,151: (r - mean) / (std + 1e-6), unbiased std, no floor.
    assert float(fspo_train.advantage_epsilon) == 1e-6 and float(fspo_train.advantage_std_floor) == 0.0
    assert str(fspo_train.scale_rewards) == "group"


ADVANTAGE = refvec.cases("fspo", "grpo_advantage_flip")


@pytest.mark.parametrize("name", sorted(ADVANTAGE))
def test_group_advantage_and_flip(fspo_train, name):
    case = ADVANTAGE[name]
    given, expected = case["input"], case["output"]
    uids = given["uid"]
    # The harness's groups are G >= 2 consecutive completions (engine.py checks G >= 2), so the
    # release's singleton rule (mean 0, std 1, core_algos.py:142-144) cannot arise: compare the
    # full groups only.
    keep = [b for b, u in enumerate(uids) if uids.count(u) > 1]
    sizes = {uids.count(uids[b]) for b in keep}
    assert len(sizes) == 1, "vector groups of one size"
    group = sizes.pop()
    lengths = [given["response_lengths"][b] for b in keep]
    returns = [[given["scores"][b]] * n for b, n in zip(keep, lengths)]
    masks = [given["sentence_mask"][b][:n] for b, n in zip(keep, lengths)]
    got = harness_advantages(fspo_train, returns, masks, group, given["response_width"])
    want = [expected["advantages"][b] for b in keep]
    assert got.tolist() == [pytest.approx(row, **TOL) for row in want]


HOTPOT = refvec.cases("fspo", "hotpot_compute_score")
HEADERS = ("Assistant:", "<|im_start|>assistant", "<|start_header_id|>assistant<|end_header_id|>")
# Cases where the protocol's 0/1 answer matcher differs from HotpotQA token F1 (README
# "Fidelity", answer score): partial F1 (the matcher gives 1 or 0), and hotpot.py's True -> yes mapping.
MATCHER_DIFFERS = {"partial_f1_extra_token", "partial_f1_missing_token", "partial_f1_overlap", "bool_mapping_True"}


def response_of(solution: str) -> str | None:
    """The response as the harness's reward sees it: the text after the first assistant header
    (fsdp_workers.py:1006-1016), special-token text dropped (TRL decodes with skip_special_tokens)."""
    for header in HEADERS:
        if header in solution:
            return solution.split(header, 1)[1].replace("<|eot_id|>", "").strip()
    return None


@pytest.mark.parametrize("name", sorted(HOTPOT))
def test_reward_is_the_answer_score_and_a_format_failure_scores_zero(llama_tokenizer, store, name):
    case = HOTPOT[name]
    response = response_of(case["input"]["solution_str"])
    if response is None:
        pytest.skip("no assistant header: the release scores 0 (no response found); the harness's reward "
                    "always receives the response alone")
    gold = case["input"]["ground_truth"]
    row = {"id": name, "question": "Who directed Jaws?", "answers": gold if isinstance(gold, list) else [gold],
           "title": "Paris"}
    reward = reward_from_config({"nli": {"backend": "standin"}}, tokenizer=llama_tokenizer, store=store)
    ids = [llama_tokenizer(response, add_special_tokens=False)["input_ids"]]
    out = reward(completions=[response], completion_ids=ids, rows=[row])
    released = case["output"]
    assert (out.extras[0]["status"] == "format") == (released["format_score"] == -2)
    ours = set(out.token_returns[0])
    assert len(ours) == 1 and released["total_score"] == released["answer_score"]  # total = answer score
    if released["format_score"] == -2:
        assert ours == {0.0} and set(out.extras[0]["mask"]) == {0}  # reward 0 (the -2 is only logged), mask 0
    elif name in MATCHER_DIFFERS:
        assert ours.pop() != pytest.approx(released["total_score"])  # the documented matcher difference
    else:
        assert ours.pop() == pytest.approx(released["total_score"])


WORKER = refvec.cases("fspo", "reward_worker_end_to_end")["group_correct_wrong_wrong_formatfail"]


class ScriptedHHEM:
    """The vector's HHEM stand-in: a table of per-sentence scores (its `computed_by`)."""

    def __init__(self, table: dict[str, float]):
        self.table, self.asked = table, []

    def score(self, pairs):
        self.asked.extend(h for _, h in pairs)
        return [self.table[h] for _, h in pairs]

    def describe(self):
        return {"kind": "nli", "backend": "scripted", "model": None, "revision": None, "stand_in": True,
                "label": "scripted HHEM", "note": "the reference vector's table"}


@pytest.fixture()
def jaws_store(tmp_path):
    """A real evidence store whose one article is the vector's `knowledge`."""
    from factrl.harness.services.evidence import build_store, open_store

    knowledge = WORKER["input"]["items"][0]["knowledge"]
    source = tmp_path / "wiki.jsonl"
    source.write_text(json.dumps({"title": "Jaws", "text": knowledge}) + "\n", encoding="utf-8")
    build_store(source, tmp_path / "wiki.sqlite3", tokenizer="words", passage_tokens=64, force=False)
    with open_store(tmp_path / "wiki.sqlite3") as opened:
        yield opened


def test_reward_worker_end_to_end(llama_tokenizer, jaws_store, fspo_train):
    given, released = WORKER["input"], WORKER["output"]
    items, ids = given["items"], given["response_token_ids"]
    texts = [item["response"] for item in items]
    assert [llama_tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts] == ids
    rows = [{"id": "jaws", "question": "Who directed Jaws?", "answers": [item["ground_truth"]], "title": "Jaws"}
            for item in items]
    nli = ScriptedHHEM(given["hhem_scores"])
    reward = reward_from_config({}, tokenizer=llama_tokenizer, store=jaws_store, nli=nli)
    out = reward(completions=texts, completion_ids=ids, rows=rows)

    # The reward: the answer score (total_score = answer_score), 0 for the format failure.
    assert [set(r) for r in out.token_returns] == [{a} for a in released["answer_scores"]]
    assert [sum(row) for row in released["reward_scores"]] == released["answer_scores"]
    assert [e["status"] == "format" for e in out.extras] == [f == -2 for f in released["format_scores"]]
    # The same sentences go to HHEM against the same evidence (the harness sends each distinct pair once).
    assert list(dict.fromkeys(nli.asked)) == list(dict.fromkeys(released["hhem_calls_in_order"]))
    assert reward.premise(rows[0]).text == items[0]["knowledge"]

    # The named difference: the release writes each sentence's sign, repeated once per token of the
    # sentence, from response position 0 (fsdp_workers.py:1091-1092), so it falls on the tags and
    # the neighbouring sentence; the harness puts it on the sentence's own tokens.
    lengths = released["response_lengths"]
    for b, n in enumerate(lengths):
        ours, theirs = out.extras[b]["mask"], released["sentence_mask"][b][:n]
        if out.extras[b]["status"] == "format":
            assert ours == [0] * n and set(theirs) == {0.0}
            continue
        layout = [1.0 if r["factual"] else -1.0 for r in out.records if r["completion"] == b
                  for _ in llama_tokenizer.tokenize(r["sentence"])]
        assert theirs == layout + [1.0] * (n - len(layout))  # the release's layout, rebuilt from our verdicts
        signs = {r["sentence_index"]: 1 if r["factual"] else -1 for r in out.records if r["completion"] == b}
        from factrl.harness.core import completions as comp

        sigma = comp.align(llama_tokenizer, ids[b]).sigma
        assert ours == [signs.get(s, 1) if s is not None else 1 for s in sigma]
    assert out.extras[2]["mask"] != released["sentence_mask"][2][:lengths[2]]  # "Jaws was released in 1980." false

    # Advantages: where the two masks agree, the harness's token advantages equal the release's.
    got = harness_advantages(fspo_train, out.token_returns, [e["mask"] for e in out.extras], 4, max(lengths))
    agree = 0
    for b, n in enumerate(lengths):
        ours, theirs = out.extras[b]["mask"], released["sentence_mask"][b]
        for t in range(n):
            if (ours[t] > 0) == (theirs[t] > 0) and (ours[t] == 0) == (theirs[t] == 0):
                assert got[b, t].item() == pytest.approx(released["advantages"][b][t], **TOL), (b, t)
                agree += 1
            else:
                assert got[b, t].item() == pytest.approx(-released["advantages"][b][t], **TOL), (b, t)
    assert 0 < agree < sum(lengths)

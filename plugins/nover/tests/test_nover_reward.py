"""The NOVER reward on the real tiny Llama with a real LoRA and the harness's PolicyHandle:
perplexities against a direct forward pass of the same model and proxy adapter, one forward
pass per call, each group ranked on its own, and the errors for missing policy / broken groups."""
from __future__ import annotations

import math

import pytest
import torch

nover = pytest.importorskip("factrl_nover", reason="factrl-nover is not installed: run `pip install -e plugins/nover` "
                                                   "(make setup does)")

from factrl.harness.core.errors import HarnessError  # noqa: E402
from factrl.harness.training.policy import PolicyHandle  # noqa: E402
from factrl_nover.templates import ppl_texts  # noqa: E402

ROWS = [{"id": "q1", "question": "What is the capital of France?", "answers": ["Paris", "Paris, France"]},
        {"id": "q2", "question": "Who wrote Hamlet?", "answers": ["William Shakespeare"]}]
GROUP_1 = ["<think>France is in Europe. Its capital is Paris.</think><answer>Paris</answer>",
           "no tags at all, Paris",
           "<think>Paris.</think><answer>Lyon</answer>"]
GROUP_2 = ["<think>Hamlet is a play.</think><answer>Shakespeare</answer>",
           "<think>It was written in England around 1600 by a famous playwright.</think><answer>Marlowe</answer>",
           "<think>Shakespeare wrote it.</think> <answer>William Shakespeare</answer>"]


@pytest.fixture(scope="module")
def setup():
    from peft import get_peft_model

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.training.args import lora_config

    cfg = compose(["model=tiny-llama", "method=nover"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    torch.manual_seed(0)
    model = get_peft_model(models.load_model(identity, cfg.model), lora_config(cfg.lora))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    policy = PolicyHandle(model, tokenizer)
    method = nover.NoverMethod(cfg.method)
    method.setup_policy(policy)  # the proxy: a frozen copy of the adapter as it is now
    with torch.no_grad():  # then the policy moves on, so proxy and policy differ
        for name, p in model.named_parameters():
            if "lora_B" in name and ".default." in name:
                p.normal_(0, 0.5)
    return cfg, tokenizer, policy, method


def _call(reward, policy, texts, rows):
    enc = reward.tokenizer
    ids = [enc(t, add_special_tokens=False)["input_ids"] + [enc.eos_token_id] for t in texts]
    return reward(prompts=[r["question"] for r in rows], completions=texts, completion_ids=ids, rows=rows,
                  policy=policy)


def _reward(setup, group_size=3, **settings):
    cfg, tokenizer, _, _ = setup
    return nover.NoverReward(tokenizer=tokenizer, model_cfg=cfg.model, group_size=group_size,
                             settings=nover.NoverSettings.from_mapping(**settings))


def _direct_ppl(setup, text, row, adapter):
    """The reasoning perplexity computed by hand: one unpadded forward of the released context +
    target (templates.py; the texts themselves are pinned by test_nover_reference_vectors.py)."""
    cfg, tokenizer, policy, _ = setup
    enc = lambda s: tokenizer(s)["input_ids"]  # noqa: E731  (special tokens included, as released)
    reasoning = text[text.index("<think>") + len("<think>"):text.index("</think>")].strip()
    context_text, target_text = ppl_texts(row["question"], reasoning, row["answers"][0])
    combined = enc(context_text + target_text)
    context, target = combined[:len(enc(context_text))], combined[len(enc(context_text)):]
    model = policy.model
    model.set_adapter(adapter)
    model.eval()
    try:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([context + target])).logits[0].float().log_softmax(-1)
    finally:
        model.set_adapter("default")
    nll = -float(torch.stack([logits[len(context) - 1 + i, t] for i, t in enumerate(target)]).mean())
    n_r = len(enc(reasoning))
    return math.exp(nll / max(1.0, 1.0 + math.log10(n_r))), n_r


def _count_forwards(policy, monkeypatch) -> list[int]:
    """The number of sequences of each forward call the reward makes, recorded while the policy's
    own target_logprobs still runs."""
    calls: list[int] = []
    original = policy.target_logprobs

    def counting(contexts, targets, **kwargs):
        calls.append(len(contexts))
        return original(contexts, targets, **kwargs)

    monkeypatch.setattr(policy, "target_logprobs", counting)
    return calls


def test_perplexity_equals_a_direct_forward_of_the_proxy(setup):
    reward = _reward(setup)
    out = _call(reward, setup[2], GROUP_1, [ROWS[0]] * 3)
    records = out.records
    for b in (0, 2):
        expected, n_r = _direct_ppl(setup, GROUP_1[b], ROWS[0], nover.PROXY_ADAPTER)
        assert records[b]["perplexity"] == pytest.approx(expected, rel=1e-4)
        assert records[b]["reasoning_tokens"] == n_r
        policy_ppl, _ = _direct_ppl(setup, GROUP_1[b], ROWS[0], "default")
        assert records[b]["perplexity"] != pytest.approx(policy_ppl, rel=1e-3)  # the proxy, not the policy
    assert records[1]["perplexity"] is None and records[1]["reward"] == 0.0  # bad format: no pass, reward 0
    # With proxy=false the trained adapter itself scores.
    own = _call(_reward(setup, proxy=False, kl_reference="base"), setup[2], GROUP_1, [ROWS[0]] * 3).records
    assert own[0]["perplexity"] == pytest.approx(_direct_ppl(setup, GROUP_1[0], ROWS[0], "default")[0], rel=1e-4)


def test_one_forward_pass_per_call(setup, monkeypatch):
    policy = setup[2]
    calls = _count_forwards(policy, monkeypatch)
    _call(_reward(setup), policy, GROUP_1 + GROUP_2, [ROWS[0]] * 3 + [ROWS[1]] * 3)
    assert calls == [5]  # the five well-formed completions of both groups, in one batch


def test_each_group_gets_its_own_ranks_and_its_own_reference(setup):
    policy = setup[2]
    both = _call(_reward(setup), policy, GROUP_1 + GROUP_2, [ROWS[0]] * 3 + [ROWS[1]] * 3)
    alone_1 = _call(_reward(setup), policy, GROUP_1, [ROWS[0]] * 3)
    alone_2 = _call(_reward(setup), policy, GROUP_2, [ROWS[1]] * 3)
    combined = alone_1.records + alone_2.records
    for got, want in zip(both.records, combined):
        if want["perplexity"] is None:
            assert got["perplexity"] is None
        else:
            assert got["perplexity"] == pytest.approx(want["perplexity"], rel=1e-4)
        assert got["rank_reward"] == want["rank_reward"] and got["efficiency_reward"] == want["efficiency_reward"]
    # Group 2 is scored against its own answer, not group 1's (the released code's prompts[0] defect).
    expected, _ = _direct_ppl(setup, GROUP_2[0], ROWS[1], nover.PROXY_ADAPTER)
    assert both.records[3]["perplexity"] == pytest.approx(expected, rel=1e-4)
    # Ranks are within each group: every group with a valid completion has a top rank of 1.
    assert max(r["rank_reward"] for r in both.records[:3]) == 1.0
    assert max(r["rank_reward"] for r in both.records[3:]) == 1.0
    ppl_2 = [r["perplexity"] for r in both.records[3:]]
    assert [r["rank_reward"] for r in both.records[3:]] == nover.rank_rewards(ppl_2)
    # Every token of a completion carries its reward.
    for returns, record in zip(both.token_returns, both.records):
        assert set(returns) == {record["reward"]}


def test_without_the_policy_the_reward_says_it_needs_it(setup):
    reward = _reward(setup)
    with pytest.raises(HarnessError, match="needs the trainer's policy handle"):
        reward(prompts=["q"], completions=GROUP_1, completion_ids=[[1]] * 3, rows=[ROWS[0]] * 3)


def test_partial_or_mixed_groups_are_refused(setup):
    with pytest.raises(ValueError, match="not a multiple of the group size 3"):
        _call(_reward(setup), setup[2], GROUP_1[:2], [ROWS[0]] * 2)
    with pytest.raises(ValueError, match="do not share one pool row"):
        _call(_reward(setup), setup[2], GROUP_1, [ROWS[0], ROWS[0], ROWS[1]])


def test_proxy_update_is_the_released_mix(setup):
    _, _, policy, method = setup
    proxy_before = policy.state_of(nover.PROXY_ADAPTER)
    trained = policy.state_of("default")
    method.on_checkpoint(policy, step=1)
    after = policy.state_of(nover.PROXY_ADAPTER)
    for key in after:
        assert torch.allclose(after[key], 0.9 * proxy_before[key] + 0.1 * trained[key], atol=1e-6)
    # Restore the fixture's proxy for the other tests.
    with torch.no_grad():
        for key, p in policy._adapter_params(nover.PROXY_ADAPTER).items():
            p.copy_(proxy_before[key])


def test_kl_reference_and_recorded_differences(setup):
    cfg, _, _, method = setup
    assert method.kl_reference_adapter == nover.PROXY_ADAPTER  # the public code's reference: the proxy
    base = nover.NoverMethod({**dict(cfg.method), "kl_reference": "base"})
    assert base.kl_reference_adapter is None
    from factrl.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match="kl_reference=proxy needs proxy=true"):
        nover.NoverMethod({**dict(cfg.method), "proxy": False})
    reward = _reward(setup)
    reward.save_steps = 25
    differs = {d["setting"] for d in method.components(reward)["settings"]["differences"]}
    assert {"policy_prompt", "group_rows", "lm_head", "proxy_cadence"} <= differs
    assert not differs & {"rank_ties", "length_rule", "kl_reference"}  # the released defaults
    shared = _reward(setup, rank_ties="shared", kl_reference="base")
    differs = {d["setting"] for d in method.components(shared)["settings"]["differences"]}
    assert {"rank_ties", "kl_reference"} <= differs


def test_identical_completions_share_one_sequence_and_score_as_apart(setup, monkeypatch):
    """Each distinct (context, target) is forwarded once per call; the returns are those of
    perplexities computed one completion at a time (an unpadded direct forward each)."""
    policy = setup[2]
    a, b = GROUP_1[0], "<think>The capital of France is a large city on the Seine.</think><answer>Paris</answer>"
    texts = [a, b, a, a, b, a]
    calls = _count_forwards(policy, monkeypatch)
    out = _call(_reward(setup, group_size=3), policy, texts, [ROWS[0]] * 6)
    assert calls == [2] and out.diagnostics["forward_sequences"] == 2.0  # six completions, two distinct
    direct = {t: _direct_ppl(setup, t, ROWS[0], nover.PROXY_ADAPTER) for t in (a, b)}
    for record, text in zip(out.records, texts):
        assert record["perplexity"] == pytest.approx(direct[text][0], rel=1e-4)
    for start in (0, 3):  # each group's ranks and efficiency from the one-at-a-time perplexities
        group = texts[start:start + 3]
        lengths = [out.records[start + i]["reasoning_tokens"] for i in range(3)]
        want = nover.score_group([True] * 3, [direct[t][0] for t in group], lengths)
        assert [r[0] for r in out.token_returns[start:start + 3]] == pytest.approx(want.total)


def test_the_answer_gate_pays_a_missed_answer_its_format_term_only(setup, monkeypatch):
    """answer_gate=match (a guard, off by default): the gold in the reasoning with a wrong answer
    or "I don't know" earns w_format only; it keeps its place in the ranks, so every other
    completion's reward is NOVER's own."""
    policy = setup[2]
    gold_reasoning = "<think>France is in Europe. Its capital is Paris.</think>"
    texts = [GROUP_1[0], gold_reasoning + "<answer>I don't know</answer>", gold_reasoning + "<answer>Lyon</answer>",
             "no tags at all, Paris"]
    calls = _count_forwards(policy, monkeypatch)
    plain = _call(_reward(setup, group_size=4), policy, texts, [ROWS[0]] * 4)
    assert plain.records[1]["perplexity"] == pytest.approx(plain.records[0]["perplexity"])  # never read the answer
    gated = _call(_reward(setup, group_size=4, answer_gate="match"), policy, texts, [ROWS[0]] * 4)
    # the same reasoning thrice: one distinct sequence forwarded
    assert calls == [1, 1] and plain.diagnostics["forward_sequences"] == 1.0
    assert gated.diagnostics["gated_rate"] == pytest.approx(2 / 4)
    assert [r["gated"] for r in gated.records] == [False, True, True, False]
    assert [r[0] for r in gated.token_returns] == pytest.approx(
        [plain.token_returns[0][0], 1.0, 1.0, plain.token_returns[3][0]])  # the others: NOVER's own rewards
    assert [r["rank_reward"] for r in gated.records[1:3]] == [0.0, 0.0]
    assert max(r[0] for r in plain.token_returns[1:3]) > 1.0  # ungated they earn a rank on top
    reward = _reward(setup, answer_gate="match")
    settings = setup[3].components(reward)["settings"]
    assert settings["answer_gate"] == "match" and settings["guards"] == ["answer_gate=match"]
    assert "answer_gate" in {d["setting"] for d in settings["differences"]}
    assert setup[3].components(_reward(setup))["settings"]["guards"] == []
    with pytest.raises(ValueError, match=r"answer_gate='any': choose one of \('none', 'match', 'strict'\)"):
        nover.NoverSettings.from_mapping(answer_gate="any")


def test_the_strict_answer_gate_also_withholds_negated_hedged_and_retracted_golds(setup):
    """answer_gate=strict: the matcher credits "not Paris", "Lyon or Paris" and "Paris... no,
    actually Lyon" (they contain the gold); strict accuracy v2 does not (two answer blocks already
    fail NOVER's own format check), so those earn w_format only, as a missed answer does; the
    honest correct answer keeps NOVER's own reward."""
    policy = setup[2]
    gold_reasoning = "<think>France is in Europe. Its capital is Paris.</think>"
    texts = [gold_reasoning + "<answer>Paris</answer>", gold_reasoning + "<answer>It is not Paris.</answer>",
             gold_reasoning + "<answer>Lyon or possibly Paris</answer>",
             gold_reasoning + "<answer>Paris... no, actually Lyon</answer>"]
    plain = _call(_reward(setup, group_size=4), policy, texts, [ROWS[0]] * 4)
    match = _call(_reward(setup, group_size=4, answer_gate="match"), policy, texts, [ROWS[0]] * 4)
    strict = _call(_reward(setup, group_size=4, answer_gate="strict"), policy, texts, [ROWS[0]] * 4)
    assert [r["gated"] for r in match.records] == [False, False, False, False]  # all contain the gold
    assert [r["gated"] for r in strict.records] == [False, True, True, True]
    assert strict.token_returns[0][0] == pytest.approx(plain.token_returns[0][0])
    assert [r[0] for r in strict.token_returns[1:]] == pytest.approx([1.0, 1.0, 1.0])
    assert min(r[0] for r in plain.token_returns[1:]) > 1.0

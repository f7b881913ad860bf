"""NOVER against vectors recorded by running the released reward code (thinkwee/NOVER@cb1a4ef,
tests/reference_vectors/nover/ in the harness): the perplexity texts and their tokenisation, N_r
with special tokens, P with the real tiny-llama weights through the harness's PolicyHandle, and
the format gate, ranks (ties as released), efficiency and totals on scripted perplexities."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

nover = pytest.importorskip("factrl_nover", reason="factrl-nover is not installed: run `pip install -e plugins/nover` "
                                                   "(make setup does)")

from factrl_nover.templates import ppl_question, ppl_texts  # noqa: E402

VECTORS = Path(__file__).resolve().parents[3] / "tests" / "reference_vectors" / "nover"
QUESTION, REFERENCE = "Who wrote Hamlet?", "William Shakespeare"
NO_BOS, BOS = "tiny-llama (harness load: no BOS added)", "tiny-llama with add_bos_token=True (Llama-2 behaviour)"


def cases(name: str) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))["cases"]}


FORMULA, TINY, REWARDS = cases("perplexity_formula"), cases("perplexity_tiny_llama"), cases("rewards_end_to_end")


@pytest.fixture(scope="module")
def tiny():
    """(model config, the harness's tokenizer, the same tokenizer.json adding BOS, model path)."""
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama", "method=nover"])
    identity = models.resolve(cfg.model)
    harness_tok = models.load_tokenizer(identity, cfg.model)
    from transformers import LlamaTokenizerFast

    with_bos = LlamaTokenizerFast(tokenizer_file=str(Path(identity.path) / "tokenizer.json"), bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>", add_bos_token=True, add_eos_token=False)
    return cfg, harness_tok, with_bos, identity


def reward_for(tiny, tokenizer_name, group_size=1):
    cfg, harness_tok, with_bos, _ = tiny
    tokenizer = harness_tok if tokenizer_name == NO_BOS else with_bos
    return nover.NoverReward(tokenizer=tokenizer, model_cfg=cfg.model, group_size=group_size,
                             settings=nover.NoverSettings.from_mapping())


@pytest.mark.parametrize("name", sorted(FORMULA))
def test_perplexity_texts_tokens_and_formula(tiny, name):
    given, released = FORMULA[name]["input"], FORMULA[name]["output"]
    assert ppl_question(QUESTION) == given["question"]  # "Question: Who wrote Hamlet?\n\n": repeated as released
    context, target = ppl_texts(QUESTION, given["reasoning"], given["target"])
    assert context == released["prompt_text"] and context + target == released["combined_text"]
    ctx_ids, tgt_ids, n_r = reward_for(tiny, given["tokenizer"]).ppl_inputs(QUESTION, given["reasoning"],
                                                                            given["target"])
    assert (len(ctx_ids), len(tgt_ids)) == (released["prompt_token_count"], released["target_token_count"])
    assert n_r == given["N_r"]  # special tokens included
    nll = given["per_target_token_nll"]
    mean = sum(nll) / len(nll)
    assert nover.scoring.reasoning_perplexity(mean, n_r) == pytest.approx(released["P"], rel=1e-12)
    assert nover.scoring.reasoning_perplexity(mean, 0) == pytest.approx(released["P_raw"], rel=1e-12)


@pytest.fixture(scope="module")
def policy(tiny):
    """tiny-llama under a fresh LoRA (B = 0, so adapter = base, the weights the vector used), its
    proxy made by the method's own setup_policy."""
    from peft import get_peft_model

    from factrl.harness.services import models
    from factrl.harness.training.args import lora_config
    from factrl.harness.training.policy import PolicyHandle

    cfg, harness_tok, _, identity = tiny
    model = get_peft_model(models.load_model(identity, cfg.model), lora_config(cfg.lora))
    handle = PolicyHandle(model, harness_tok)
    nover.NoverMethod(cfg.method).setup_policy(handle)
    return handle


@pytest.mark.parametrize("name", sorted(TINY))
def test_perplexity_with_tiny_llama_through_the_policy_handle(tiny, policy, name):
    given, released = TINY[name]["input"], TINY[name]["output"]
    reward = reward_for(tiny, given["tokenizer"])
    text = f"<think>{given['reasoning']}</think><answer>x</answer>"
    row = {"id": "hamlet", "question": QUESTION, "answers": [given["target"]]}
    out = reward(completions=[text], completion_ids=[[1, 2, 3]], rows=[row], policy=policy)
    record = out.records[0]
    assert record["reasoning_tokens"] == released["N_r"]
    assert record["perplexity"] == pytest.approx(released["P"], rel=2e-5)  # float32 forwards on both sides


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_format_ranks_efficiency_and_totals(tiny, name):
    """The reward's arithmetic on the vector's completions, with the proxy's perplexities taken from
    the vector's table (the release's forward was scripted the same way)."""
    given, released = REWARDS[name]["input"], REWARDS[name]["output"]
    assert given["reference"] == REFERENCE and given["prompt"].startswith(f"Question: {QUESTION}\n\n")
    assert ppl_question(QUESTION) == released["question_passed_to_perplexity"]
    reward = reward_for(tiny, given["tokenizer"])
    parsed = [nover.parse_strict(c) for c in given["completions"]]
    valid = [p is not None for p in parsed]
    assert valid == released["valid"]
    lengths = [reward.ppl_inputs(QUESTION, p.reasoning.strip(), REFERENCE)[2] if p else None for p in parsed]
    assert [x if x is not None else 0 for x in lengths] == released["length_N_r"]
    table = given["P_by_reasoning"]
    ppl = [table[p.reasoning.strip()][0] if p else None for p in parsed]
    scores = nover.score_group(valid, ppl, lengths, reward.settings.weights, reward.settings.rank_ties)
    assert scores.format == released["tag_format_reward"]
    assert scores.reasoning == pytest.approx(released["reasoning_reward"], rel=1e-12)
    assert scores.efficiency == pytest.approx(released["efficiency_reward"], rel=1e-12)
    assert scores.total == pytest.approx(released["total_weights_1_1_1"], rel=1e-12)
    called = [{"question": ppl_question(QUESTION), "reasoning": p.reasoning.strip(), "target": REFERENCE}
              for p in parsed if p]
    assert called == released["perplexity_calls_of_reasoning_reward"]

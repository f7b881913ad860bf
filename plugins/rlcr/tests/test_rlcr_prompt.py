"""RLCR's prompt addition (Method.prompt_addition, interface 5): the release's request for
`<analysis>` and `<confidence>` reaches the policy's prompt in training, in the evaluation of an
RLCR run and in the probe; a completion that follows the format it states earns a real reward; and
the embedded default's demo pool still fits its prompt budget with it."""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed (make setup installs it)")
from factrl_rlcr import RLCRMethod  # noqa: E402
from factrl_rlcr.prompt import PROMPT_ADDITION  # noqa: E402
from factrl_rlcr.reward import RLCRReward, RLCRSettings  # noqa: E402
from factrl_rlcr.scoring import PATTERNS  # noqa: E402

from factrl.harness.engine.config import compose  # noqa: E402
from factrl.harness.core.prompts import SYSTEM_PROMPT, prompt_hash  # noqa: E402
from factrl.harness.training.engine import build_dataset, method_system  # noqa: E402

ROW = {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw", "Warszawa"]}
FORMAT_LEAD = "The final format that must be followed is : "


def following(answer: str, confidence: str) -> str:
    """The addition's own format line with its placeholders filled in, as a model that follows it writes."""
    template = PROMPT_ADDITION[PROMPT_ADDITION.index(FORMAT_LEAD) + len(FORMAT_LEAD):]
    return (template.replace("reasoning process here", "Curie was born in Warsaw in 1867.")
            .replace("final answer here", answer)
            .replace("analysis about confidence and uncertainty here", "The birthplace is well documented.")
            .replace("confidence level here (number between 0 and 1)", confidence))


def test_the_addition_holds_the_releases_sentences_and_format():
    assert RLCRMethod.prompt_addition == PROMPT_ADDITION and RLCRMethod.version == "3"
    # system_prompts.py:19 (first sentence), :20 (first sentence), :29 at damanimehul/RLCR@8904bed
    assert PROMPT_ADDITION.startswith("The confidence level is a number between 0 and 1 (inclusive) enclosed "
                                      "within <confidence> </confidence> tags. The analysis about confidence and "
                                      "uncertainty is enclosed within <analysis> </analysis> tags. " + FORMAT_LEAD)
    assert "<confidence>" not in SYSTEM_PROMPT and "<analysis>" not in SYSTEM_PROMPT


def test_a_completion_following_the_stated_format_gets_a_real_reward():
    reward = RLCRReward(settings=RLCRSettings.from_mapping())
    texts = [following("Warsaw", "0.9"), following("Paris", "0.2"), "<think>x</think><answer>Warsaw</answer>"]
    assert all(re.match(PATTERNS["tabc"], t, re.DOTALL) for t in texts[:2])
    out = reward(completions=texts, completion_ids=[[1, 2, 3]] * 3, rows=[ROW] * 3)
    returns = [None if r is None else r[0] for r in out.token_returns]
    # correct at 0.9: 0.5 format + 0.5 accuracy + 0.5 * (1 - 0.1^2) + 1e-6 * 0.9; wrong at 0.2: 0.5 + 0.5 * (1 - 0.04) + 1e-6 * 0.2
    assert returns[0] == pytest.approx(1.0 + 0.5 * 0.99 + 0.9e-6)
    assert returns[1] == pytest.approx(0.5 + 0.5 * 0.96 + 0.2e-6)
    assert returns[2] is None and out.no_signal_reasons == [None, None, "no_confidence"]  # the shared format alone


def test_training_prompts_carry_the_addition_and_the_demo_pool_fits_the_embedded_budget():
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import _check_max_prompt_length

    cfg = compose(["method=rlcr"])  # the embedded default: SmolLM2-135M, the demo pool
    method = RLCRMethod(cfg.method)
    assert method_system(method) == f"{SYSTEM_PROMPT} {PROMPT_ADDITION}"
    tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    rows = load_pool(cfg.pool, cfg.eval, evidence_cfg=cfg.get("evidence"))
    dataset = build_dataset(rows, cfg.model, tokenizer=tokenizer, system=method_system(method))
    assert all(f"{SYSTEM_PROMPT} {PROMPT_ADDITION}" in p for p in dataset["prompt"][:3])  # its text prompt (a prefix)
    _check_max_prompt_length(tokenizer, dataset, int(cfg.train.max_prompt_length))  # 238 of 256 tokens at most


def test_the_probe_sees_and_records_the_addition():
    from factrl.harness.services import models
    from factrl.harness.probe import probe_method
    from factrl.harness.probe.runner import _prompt_texts
    from tests.probe.conftest import POOL

    cfg = compose(["method=rlcr", "model=tiny-llama", "model.response_prefix='<think>'"])  # a text prompt: all of it
    tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    texts = _prompt_texts(POOL[:2], cfg.model, tokenizer, RLCRMethod(cfg.method))
    assert all(f"{SYSTEM_PROMPT} {PROMPT_ADDITION}" in t for t in texts)
    assert not any(PROMPT_ADDITION in t for t in _prompt_texts(POOL[:2], cfg.model, tokenizer))
    result = probe_method(compose(["method=rlcr", "model=tiny-llama"]), rows=POOL, n=2, tokenizer=tokenizer)
    entry = result.components["prompt"]
    assert entry["text"] == PROMPT_ADDITION and entry["hash"] == prompt_hash(PROMPT_ADDITION)


def test_the_evaluation_of_an_rlcr_run_asks_with_the_addition(tmp_path):
    """`evaluate` on the config of an RLCR run sends the shared prompt plus the addition (a real
    HTTP server on 127.0.0.1 stands in for the served model) and records it; corver's does not."""
    from factrl.evals import evaluate
    from factrl.harness.services.models import resolve
    from tests.evals.openai_server import ScriptedServer

    with ScriptedServer() as server:
        systems = {}
        for method in ("rlcr", "corver"):
            cfg = compose([f"method={method}", "model=tiny-llama", "eval=demo", "eval.limit=2", "eval.cache=false",
                           "eval.backend=openai", f"eval.openai.base_url={server.url}"])
            evaluate(cfg, identity=resolve(cfg.model), out_dir=tmp_path / method)
            systems[method] = {b["messages"][0]["content"] for b in server.bodies[len(systems) * 2:]}
    assert systems == {"rlcr": {f"{SYSTEM_PROMPT} {PROMPT_ADDITION}"}, "corver": {SYSTEM_PROMPT}}
    generation = json.loads((tmp_path / "rlcr" / "demo" / "metrics.json").read_text())["generation"]
    assert generation["prompt_hash"] == prompt_hash()  # the shared prompt's: what leaderboard versions freeze
    assert generation["method_prompt"] == {"method": "rlcr", "position": "system, after the shared prompt",
                                           "hash": prompt_hash(PROMPT_ADDITION), "chars": len(PROMPT_ADDITION),
                                           "system_hash": prompt_hash(f"{SYSTEM_PROMPT} {PROMPT_ADDITION}")}
    plain = json.loads((tmp_path / "corver" / "demo" / "metrics.json").read_text())["generation"]
    assert "method_prompt" not in plain and plain["prompt_hash"] == prompt_hash()

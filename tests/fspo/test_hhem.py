"""FSPO with an HHEM-2.1-shaped model: a tiny random checkpoint (docs/BASELINES.md §2.1 recipe) loaded
through the real paths, the checkpoint's own remote code and the harness class, scoring a
batch in one call; the components record what judged the sentences."""
from __future__ import annotations

import pytest

from factrl.methods.fspo import FSPO, reward_from_config
from tests.fspo.conftest import row

TEXT = "<think>Paris is the capital of France. The Eiffel Tower was built in 1900.</think><answer>Paris</answer>"


@pytest.mark.parametrize("code", ["remote", "harness"])
def test_tiny_hhem_scores_reasoning_in_one_call(llama_tokenizer, store, tiny_hhem, code):
    hhem, foundation = tiny_hhem
    method_cfg = {"name": "fspo", "nli": {"backend": "hhem", "model": str(hhem), "foundation": str(foundation),
                                          "code": code, "batch_size": 4}}
    reward = reward_from_config(method_cfg, tokenizer=llama_tokenizer, store=store)
    ids = [llama_tokenizer(TEXT, add_special_tokens=False)["input_ids"]] * 4
    out = reward(completions=[TEXT] * 4, completion_ids=ids, rows=[row()] * 4)
    scores = [r["score"] for r in out.records]
    assert len(scores) == 8 and all(0.0 <= s <= 1.0 for s in scores)
    assert scores[:2] == scores[2:4] == scores[4:6]  # the same pair scores the same in any batch position
    assert reward.nli.stats()["calls"] == 1 and reward.nli.stats()["pairs"] == 2  # deduplicated, one call
    # The mask follows the scores: +1 / -1 per sentence by the strict > 0.5 rule.
    signs = {r["sentence_index"]: (1 if r["factual"] else -1) for r in out.records[:2]}
    assert set(out.extras[0]["mask"]) <= {1, -1} and (-1 in out.extras[0]["mask"]) == (-1 in signs.values())
    entry = FSPO({"name": "fspo"}).components(reward)["nli"]
    assert entry["kind"] == "nli" and entry["backend"] == "hhem" and entry["code"] == code
    assert entry["stand_in"] is True and entry["note"]  # a local directory cannot be verified as HHEM
    assert entry["max_premise_tokens"] == 2048

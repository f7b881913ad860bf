"""CorVer end to end: completions -> per-token returns through the real index (hand-computed).

Counts on the test index (conftest.py): Paris/France 25 (+0.1), Einstein/Ulm 8 (0.0),
Curie/Warsaw 2 (-0.1), Mozart/Tokyo 0 (-0.2). Extractor: the heuristic backend.
"""
from __future__ import annotations

import time

import pytest
from omegaconf import OmegaConf

from factrl.harness.core.method import RunContext
from factrl.methods.corver import METHOD, reward_from_config

ROWS = {
    "Q1": {"id": "q1", "question": "What is the capital of France?", "answers": ["Paris"], "title": "Paris"},
    "Q2": {"id": "q2", "question": "Where did Mozart live?", "answers": ["Vienna"], "title": "Mozart"},
    "Q3": {"id": "q3", "question": "Where was Einstein born?", "answers": ["Ulm"], "title": "Einstein"},
}
C1 = "<think>Paris is the capital of France. Curie studied in Warsaw.</think>\n<answer>Paris</answer>"
C2 = "<think>Mozart lived in Tokyo. Café 日本 is nice.</think> <answer>I don't know</answer>"
C3 = "Einstein was born in Ulm. <answer>Ulm"  # no think block, answer cut off
C4 = "<think>Einstein was born in Ulm.</think><answer>Paris</answer>"  # Q1's gold, asked Q3
C5 = "Paris."  # no tags at all


def method_cfg(**overrides):
    from factrl.harness.engine.config import compose

    args = ["method=corver", "method.extractor.backend=heuristic"] + [f"method.{k}={v}" for k, v in overrides.items()]
    return compose(args).method


def encode(tok, text, eos=True):
    return tok(text, add_special_tokens=False).input_ids + ([tok.eos_token_id] if eos else [])


@pytest.fixture(scope="module")
def batch(llama_tokenizer):
    texts = [C1, C2, C3, C4, C5]
    ids = [encode(llama_tokenizer, C1), encode(llama_tokenizer, C2), encode(llama_tokenizer, C3, eos=False),
           encode(llama_tokenizer, C4), encode(llama_tokenizer, C5)]
    rows = [ROWS["Q1"], ROWS["Q2"], ROWS["Q3"], ROWS["Q3"], ROWS["Q1"]]
    return {"prompts": [r["question"] for r in rows], "completions": texts, "completion_ids": ids, "rows": rows}


def test_hand_computed_per_token_returns(llama_tokenizer, corpus_cfg, batch):
    reward = reward_from_config(method_cfg(), tokenizer=llama_tokenizer, corpus_cfg=corpus_cfg)
    out = reward(**batch)
    ids = batch["completion_ids"]
    # C1, 31 tokens + EOS, R_response = +2 (correct) +1 (format) = 3:
    #   ▁< th ink >                                       tags               3.0
    #   Par is ▁is ▁the ▁capital ▁of ▁France .            Paris/France 25    3.0 + 0.1
    #   ▁Cur ie ▁studied ▁in ▁Wars aw .</                 Curie/Warsaw 2     3.0 - 0.1
    #   th ink > <0x0A> < answer >                        tags, newline      3.0
    #   Par is                                            "Paris": no triple 3.0
    #   </ answer > </s>                                  tags, EOS          3.0
    assert len(ids[0]) == 32
    assert out.token_returns[0] == pytest.approx([3.0] * 4 + [3.1] * 8 + [2.9] * 7 + [3.0] * 13)
    # C2, refusal: correctness -1, format +1 -> R = 0; Mozart/Tokyo 0 -> -0.2 on its 7 tokens;
    # "Café 日本 is nice." has no triple.
    assert len(ids[1]) == 34
    assert out.token_returns[1] == pytest.approx([0.0] * 4 + [-0.2] * 7 + [0.0] * 23)
    # C3: Q3's own gold "Ulm" is right (+2) but the block is open (-1): R = 1. The sentence
    # before <answer> is outside the tags: response-level return only.
    assert out.token_returns[2] == pytest.approx([1.0] * len(ids[2]))
    # C4 answers Q1's gold to Q3: wrong (-1), format +1, Einstein/Ulm 8 -> 0.0.
    assert out.token_returns[3] == pytest.approx([0.0] * len(ids[3]))
    # C5: no tags -> no answer (-1), bad format (-1), nothing aligns -> fallback.
    assert out.token_returns[4] == pytest.approx([-2.0] * len(ids[4]))

    d = out.diagnostics
    assert d["correct_rate"] == pytest.approx(2 / 5) and d["format_rate"] == pytest.approx(3 / 5)
    assert d["alignment_fallback_rate"] == pytest.approx(1 / 5)
    assert d["sentences"] == 9  # C1: 3, C2: 3, C3: 1, C4: 2
    assert d["frac_high"] == pytest.approx(1 / 9) and d["frac_low"] == pytest.approx(1 / 9)
    assert d["frac_zero"] == pytest.approx(1 / 9) and d["frac_mid"] == pytest.approx(1 / 9)
    assert d["frac_no_triple"] == pytest.approx(5 / 9) and d["frac_failed"] == 0.0
    assert d["corpus_reward_mean"] == pytest.approx((0.1 - 0.1 - 0.2) / 9)
    first = [r for r in out.records if r["completion"] == 0]
    assert [(r["sentence"], r["count"], r["status"], r["reward"]) for r in first] == [
        ("Paris is the capital of France.", 25, "high", 0.1), ("Curie studied in Warsaw.", 2, "low", -0.1),
        ("Paris", None, "no_triple", 0.0)]
    assert first[0]["query"] == ["Paris", "France"] and first[0]["row_id"] == "q1" and first[0]["tokens"] == 8


def test_each_completion_is_judged_against_its_own_row(llama_tokenizer, batch):
    reward = reward_from_config(method_cfg(lambda_c=0), tokenizer=llama_tokenizer)  # A1: nothing opened
    assert reward.extractor is None and reward.counter is None
    out = reward(**batch)
    assert [r[0] for r in out.token_returns] == [3.0, 0.0, 1.0, 0.0, -2.0]
    assert all(len(set(r)) == 1 for r in out.token_returns)  # lambda_c = 0: plain response-level GRPO
    assert out.records == [] and out.diagnostics["sentences"] == 0


def test_ablations_a2_a3_and_relcheck(llama_tokenizer, counter, batch):
    a2 = reward_from_config(method_cfg(lambda_j=0), tokenizer=llama_tokenizer, counter=counter)(**batch)
    assert a2.token_returns[0] == pytest.approx([1.0] * 4 + [1.1] * 8 + [0.9] * 7 + [1.0] * 13)
    a3 = reward_from_config(method_cfg(assignment="sentence_mean"), tokenizer=llama_tokenizer,
                            counter=counter)(**batch)
    assert a3.token_returns[0] == pytest.approx([3.0] * 32)  # mean(+0.1, -0.1, 0) broadcast
    assert a3.token_returns[1] == pytest.approx([-0.2 / 3] * 34)
    rel = reward_from_config(method_cfg(aggregation="relcheck"), tokenizer=llama_tokenizer,
                             counter=counter)(**batch)
    record = rel.records[0]
    assert record["relation_query"] == ["Paris", "capital", "France"] and record["relation_count"] == 25
    assert rel.token_returns[0][4] == pytest.approx(3.1)
    double = reward_from_config(method_cfg(lambda_c=2.0), tokenizer=llama_tokenizer, counter=counter)(**batch)
    assert double.token_returns[0][4] == pytest.approx(3.2) and double.token_returns[1][4] == pytest.approx(-0.4)


def test_alignment_threshold_falls_back_without_extractor_or_corpus(llama_tokenizer, counter):
    text = "<think>Paris is the capital of France.\n\n\n\n\n\nCurie studied in Warsaw.</think><answer>Paris</answer>"
    ids = encode(llama_tokenizer, text)
    kwargs = {"completions": [text], "completion_ids": [ids], "rows": [ROWS["Q1"]]}
    strict = reward_from_config(method_cfg(alignment_threshold=1.0), tokenizer=llama_tokenizer,
                                counter=counter)
    out = strict(**kwargs)
    assert out.token_returns == [[3.0] * len(ids)] and out.records == []
    assert out.diagnostics["alignment_fallback_rate"] == 1.0 and 0.5 < out.diagnostics["alignment_rate_mean"] < 1
    assert out.diagnostics["extractor_seconds"] == 0.0 and out.diagnostics["lookup_seconds"] == 0.0
    default = reward_from_config(method_cfg(), tokenizer=llama_tokenizer, counter=counter)(**kwargs)
    assert len(default.records) == 3


def test_method_builds_from_the_run_context(llama_tokenizer, corpus_cfg, batch):
    from factrl.harness.engine.config import compose

    cfg = compose(["method=corver", "method.extractor.backend=heuristic"])
    OmegaConf.set_struct(cfg, False)
    cfg.corpus = OmegaConf.create(corpus_cfg)
    method = METHOD(cfg.method)
    assert (method.name, method.algorithm) == ("corver", "grpo")
    reward = method.build_reward(RunContext(config=cfg, tokenizer=llama_tokenizer))
    out = reward(**batch)
    assert out.token_returns[0][4] == pytest.approx(3.1)
    reward.close()


def test_bad_settings_are_config_errors(llama_tokenizer, corpus_cfg):
    from factrl.harness.core.errors import ConfigError

    for bad in ({"aggregation": "max"}, {"assignment": "mean"}, {"alignment_threshold": 2}, {"splitter": "nltk"}):
        with pytest.raises(ConfigError):
            reward_from_config(method_cfg(**bad), tokenizer=llama_tokenizer, corpus_cfg=corpus_cfg)
    with pytest.raises(ConfigError, match="corpus"):
        reward_from_config(method_cfg(), tokenizer=llama_tokenizer, corpus_cfg={"name": "none", "backend": "none"})


def test_overhead_for_eight_completions_of_64_tokens(llama_tokenizer, corpus_cfg, tmp_path, capsys):
    """The heuristic extractor + lookups + alignment of one step stay far below a step's cost."""
    sentences = ["Paris is the capital of France.", "Curie studied in Warsaw.", "Einstein was born in Ulm.",
                 "Mozart lived in Tokyo.", "It is a well known fact.", "Tokyo is a large city."]
    texts, ids = [], []
    for b in range(8):
        body = " ".join(sentences[(b + k) % 6] for k in range(8))
        tok = encode(llama_tokenizer, f"<think>{body} Sample {b}.</think><answer>Paris</answer>")[:64]
        texts.append(llama_tokenizer.decode(tok, skip_special_tokens=True))
        ids.append(tok)
    assert {len(i) for i in ids} == {64}
    cached = {**corpus_cfg, "cache": True, "cache_path": str(tmp_path / "counts.sqlite3")}
    reward = reward_from_config(method_cfg(), tokenizer=llama_tokenizer, corpus_cfg=cached)
    kwargs = {"completions": texts, "completion_ids": ids, "rows": [ROWS["Q1"]] * 8}
    lines = []
    for label in ("first call (empty caches)", "second call (warm caches)"):
        started = time.perf_counter()
        out = reward(**kwargs)
        total = time.perf_counter() - started
        d = out.diagnostics
        lines.append(f"{label}: total {total * 1e3:.1f} ms, alignment {d['alignment_seconds'] * 1e3:.1f} ms, "
                     f"extractor {d['extractor_seconds'] * 1e3:.1f} ms, lookups {d['lookup_seconds'] * 1e3:.1f} ms, "
                     f"response {d['response_seconds'] * 1e3:.1f} ms")
        assert all(len(r) == 64 for r in out.token_returns)
        assert total < 2.0  # generous for a slow CI machine; tens of milliseconds here
    with capsys.disabled():
        print(f"\n[corver reward overhead, 8 completions x 64 tokens, {int(d['sentences'])} sentences]\n  "
              + "\n  ".join(lines))

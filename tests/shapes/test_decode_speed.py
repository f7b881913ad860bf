"""harness/services/models/decode_speed.py: the decode bound gpu_step prints, and the step projection to 1,000 tokens."""
from __future__ import annotations

import pytest

from factrl.harness.services.models import decode_speed as ds

# A made-up Llama whose numbers are easy by hand: 2 layers, h 100, I 200, 4 heads of 25 (q 100),
# 2 KV heads (kv 50), vocabulary 1,000, untied head.
ARCH = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 100, "intermediate_size": 200,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 25, "vocab_size": 1000,
        "tie_word_embeddings": False}


def test_bandwidths_by_device_name():
    assert ds.bandwidth_tbps("NVIDIA H200") == 4.8
    assert ds.bandwidth_tbps("NVIDIA H100 80GB HBM3") == 3.35
    assert ds.bandwidth_tbps("NVIDIA H100 PCIe") == 2.0
    assert ds.bandwidth_tbps("NVIDIA GH200 480GB") == 4.9
    assert ds.bandwidth_tbps("NVIDIA A100-SXM4-80GB") == 2.039
    assert ds.bandwidth_tbps("Tesla T4") is None


def test_decode_bound_by_hand():
    # per layer: attention 100x100 + 2 x 100x50 + 100x100 = 30,000; MLP 3 x 100 x 200 = 60,000; norms 200
    # -> 90,200 x 2 layers = 180,400; final norm 100; head 100,000 (the input embedding is not streamed)
    weights = (180_400 + 100 + 100_000) * 2
    assert ds.streamed_weight_bytes(ARCH) == weights
    kv_token = 2 * 2 * 50 * 2  # keys and values, 2 layers, kv 50, bf16: 400 bytes
    got = ds.decode_bound(ARCH, rows=4, prompt_len=10, new_tokens=3, bandwidth_tbps=1e-6)  # 1 MB/s
    kv = 4 * kv_token * (10 + 11 + 12)  # dynamic: the cache holds P + t at decode step t
    assert got["seconds"] == pytest.approx((3 * weights + kv) / 1e6)
    assert got["tokens_per_s"] == pytest.approx(12 / got["seconds"])
    assert got["kv_bytes"] == pytest.approx(kv / 3) and got["weight_bytes"] == weights
    static = ds.decode_bound(ARCH, rows=4, prompt_len=10, new_tokens=3, bandwidth_tbps=1e-6, static_cache=True)
    assert static["seconds"] == pytest.approx((3 * weights + 3 * 4 * kv_token * 13) / 1e6)  # the whole P + T


def test_the_paper_shape_bound_is_about_twenty_times_the_stock_rate():
    """The premise of the fast path: 973 tokens/s (the stock HF path on an H200, 48 rows, 1,000
    tokens) is a few per cent of what the H200's 4.8 TB/s allows for Llama-3.2-3B."""
    from factrl.harness.engine.config import compose
    from factrl.harness.services.models.shapes import architecture

    arch = architecture(compose(["model=llama-3.2-3b"]).model)
    bound = ds.decode_bound(arch, rows=48, prompt_len=140, new_tokens=1000, bandwidth_tbps=4.8)
    assert 6.4e9 < bound["weight_bytes"] < 6.5e9  # tied embeddings: the head is the embedding, read once
    assert 15 < bound["tokens_per_s"] / 973 < 30


def test_project_step_scales_each_phase_by_hand():
    phases = {"generate": 10.0, "rollout": 13.0, "reward": 1.0, "update": 4.0, "save": 0.5}
    # generate x 4; log-probs (13 - 10 - 1 = 2) and update x (100 + 1000) / (100 + 250) = 22/7; reward x 4
    expected = 40.0 + 2.0 * 22 / 7 + 4.0 + 4.0 * 22 / 7 + 0.5
    assert ds.project_step(phases, measured_tokens=250, target_tokens=1000, prompt_len=100) == pytest.approx(expected)
    same = ds.project_step(phases, measured_tokens=250, target_tokens=250, prompt_len=100)
    assert same == pytest.approx(10.0 + 2.0 + 1.0 + 4.0 + 0.5)

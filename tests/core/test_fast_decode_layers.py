"""The CPU decode step's two layer-level speed-ups keep the numbers (fp32):

- sibling projections as one matmul (models/fused_projections.py, inside merged_linears with
  prepack): the logits of a grouped-query Llama with and without fusing within 1e-6 x their scale
  (oneDNN computes each output element as the same dot product); each member's output is its own
  layer's, also when a member is called alone or its input was written in place;
- grouped-query SDPA (models/grouped_attention.py): the same logits bit for bit on a left-padded
  batch, no key/value copies made, the same greedy tokens with a KV cache, and transformers' own
  rule back on leaving.
"""
from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="oneDNN is not built into this torch")


def _gqa_llama(seed: int = 0, bias: bool = False):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, attention_bias=bias,
                         attn_implementation="sdpa", pad_token_id=0)
    model = LlamaForCausalLM(config).eval()
    if bias:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith(".bias"):
                    p.normal_(0, 0.5)
    return model


def _padded_batch():
    ids = torch.randint(3, 97, (3, 9), generator=torch.Generator().manual_seed(5))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0  # left padding, so transformers passes an attention mask
    mask[1, :2] = 0
    return ids, mask


@pytest.mark.parametrize("bias", [False, True])
def test_fused_siblings_give_the_separate_layers_logits(bias):
    from factrl.harness.services.models.merged_linears import merged_linears

    model = _gqa_llama(bias=bias)
    ids, mask = _padded_batch()
    with torch.no_grad():
        with merged_linears(model, rows=3, prepack=True, fuse=False) as separate_report:
            separate = model(input_ids=ids, attention_mask=mask).logits
        with merged_linears(model, rows=3, prepack=True) as report:
            fused = model(input_ids=ids, attention_mask=mask).logits
        plain = model(input_ids=ids, attention_mask=mask).logits
    assert report.fused == 2 * 2 and separate_report.fused == 0  # 2 layers x (q/k/v, gate/up)
    assert report.head == 2 * 7 + 1  # every plain linear prepacked, the output head included
    scale = float(plain.abs().max())
    assert torch.allclose(fused, separate, rtol=0, atol=1e-6 * scale), float((fused - separate).abs().max())
    assert torch.allclose(fused, plain, rtol=0, atol=1e-5 * scale)
    assert not any("forward" in vars(m) for m in model.modules())  # every forward restored


def test_a_member_called_alone_or_on_a_changed_input_is_its_own_layer():
    from factrl.harness.services.models.merged_linears import merged_linears

    model = _gqa_llama()
    attention = model.model.layers[0].self_attn
    x = torch.randn(2, 3, 64)
    with torch.no_grad():
        expected = {name: getattr(attention, name)(x) for name in ("q_proj", "k_proj", "v_proj")}
        with merged_linears(model, rows=2, prepack=True):
            assert torch.allclose(attention.v_proj(x), expected["v_proj"], atol=1e-6)  # alone, last member first
            assert torch.allclose(attention.q_proj(x), expected["q_proj"], atol=1e-6)
            x.mul_(2.0)  # written in place between two members' calls: computed again
            assert torch.allclose(attention.k_proj(x), 2.0 * expected["k_proj"], atol=1e-5)
            other = torch.randn(2, 3, 64)
            assert torch.allclose(attention.k_proj(other), other @ attention.k_proj.weight.T, atol=1e-5)


def test_fused_siblings_are_kept_for_evaluation_while_the_weights_hold():
    from factrl.harness.services.models.merged_linears import merged_linears

    model = _gqa_llama()
    ids, mask = _padded_batch()
    attention = model.model.layers[0].self_attn
    with torch.no_grad():
        with merged_linears(model, rows=3, prepack=True, keep=True):
            first = model(input_ids=ids, attention_mask=mask).logits
        packed = attention._factrl_fused[("q_proj", "k_proj", "v_proj")][2]
        with merged_linears(model, rows=3, prepack=True, keep=True):
            again = model(input_ids=ids, attention_mask=mask).logits
        assert attention._factrl_fused[("q_proj", "k_proj", "v_proj")][2] is packed  # reused, not rebuilt
        attention.k_proj.weight.add_(0.5)  # a changed weight is packed again
        with merged_linears(model, rows=3, prepack=True, keep=True):
            changed = model(input_ids=ids, attention_mask=mask).logits
        assert attention._factrl_fused[("q_proj", "k_proj", "v_proj")][2] is not packed
        reference = model(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(first, again)
    assert torch.allclose(changed, reference, rtol=0, atol=1e-5 * float(reference.abs().max()))


def test_grouped_query_sdpa_is_the_same_attention_without_copies(monkeypatch):
    from transformers.integrations import sdpa_attention

    from factrl.harness.services.models.grouped_attention import grouped_query_sdpa

    model = _gqa_llama()
    ids, mask = _padded_batch()
    original_rule = sdpa_attention.use_gqa_in_sdpa
    copies = []
    repeat = sdpa_attention.repeat_kv
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: copies.append(n) or repeat(x, n))
    with torch.no_grad():
        stock = model(input_ids=ids, attention_mask=mask).logits
        assert copies  # transformers copies each key/value head where a mask is passed
        copies.clear()
        with grouped_query_sdpa() as active:
            grouped = model(input_ids=ids, attention_mask=mask).logits
            tokens = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=6)
        assert active and not copies
        stock_tokens = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=6)
    assert torch.equal(grouped, stock)
    assert torch.equal(tokens, stock_tokens)
    assert sdpa_attention.use_gqa_in_sdpa is original_rule
    with grouped_query_sdpa(enabled=False) as active:
        assert not active and sdpa_attention.use_gqa_in_sdpa is original_rule

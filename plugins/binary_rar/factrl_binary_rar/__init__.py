"""`binary_rar`: Binary RAR (Chen et al., arXiv 2510.17733; chentong0/rl-binary-rar) as an
out-of-tree factrl-harness method.

GRPO with a binary retrieval-augmented reward: 1 when an LLM verifier finds no contradiction
between the response and the evidence retrieved for it, else 0. It uses only the public method
interface (settings_class; the evidence store and the judge client through RunContext). See README.md.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core import method as _interface
from factrl.harness.core.method import Method, RunContext

from .fidelity import differences
from .prompts import PAPER_VERIFIER, VERIFY
from .reward import BINARY_RAR_DEFAULTS, DIAGNOSTIC_KEYS, BinaryRARReward, BinaryRARSettings, response_of

REQUIRED_INTERFACE = 3
if getattr(_interface, "INTERFACE_VERSION", 1) < REQUIRED_INTERFACE:
    raise ImportError(f"factrl-binary-rar needs factrl-harness method interface version >= {REQUIRED_INTERFACE} "
                      f"(settings_class); this harness has {getattr(_interface, 'INTERFACE_VERSION', 1)}: "
                      f"upgrade factrl-harness")


class BinaryRARMethod(Method):
    name = "binary_rar"
    label = "Binary RAR"
    algorithm = "grpo"
    description = "binary retrieval-augmented reward: 1 iff a verifier finds no contradiction with retrieved evidence (GRPO)"
    version = "1"
    config_defaults = BINARY_RAR_DEFAULTS
    settings_class = BinaryRARSettings
    # The training engine: the release's open-instruct command (README.md:126-175, the run whose verifier is
    # Qwen3-32B, binary_rar_open_instruct/grpo_fast_fact_v2.py); its Tinker run trains with Tinker's own loop,
    # which is not in the repository. Registered as `protocol/method/binary_rar`; the shared protocol keeps
    # LR, KL, T, G, LoRA and steps (README "Training engine").
    protocol_defaults = {
        "train": {
            "optim": "adamw_torch",           # grpo_fast_fact_v2.py:679 torch.optim.AdamW
            "adam_betas": [0.9, 0.999],       # not set: torch's defaults
            "weight_decay": 0.0,              # grpo_fast_fact_v2.py:199
            "lr_scheduler": "linear",         # README.md:165 --lr_scheduler_type linear
            "lr_scheduler_kwargs": {},
            "warmup_ratio": 0.0,              # grpo_fast_fact_v2.py:195-197 (no warmup given)
            "loss_type": "bnpo",              # grpo_fast_fact_v2.py:1069 masked_mean over a (packed) micro-batch's tokens
            "entropy_coef": 0.0,
            "kl_bias_correction": False,      # grpo_fast_fact_v2.py:1069 pg loss + beta * k3, no importance weight
            "scale_rewards": "group",         # grpo_fast_fact_v2.py:1689-1690 (r - mean) / (std + 1e-8)
            "advantage_std_floor": 0.0,
            "advantage_epsilon": 1.0e-8,
            "epsilon_low": 0.2,               # grpo_fast_fact_v2.py:248-250 clip_lower / clip_higher
            "epsilon_high": 0.2,
            "vllm": {"importance_sampling_correction": False},  # none in grpo_fast_fact_v2.py's loss (1040-1069)
        },
        "judge": {"paper_model": PAPER_VERIFIER},
    }

    def build_reward(self, ctx: RunContext) -> BinaryRARReward:
        from factrl.harness.core.prompts import response_prefix

        evidence_cfg = ctx.service_config("evidence", "binary_rar")
        judge_cfg = ctx.service_config("judge", "binary_rar")
        store = ctx.open_evidence(evidence_cfg)
        judge = ctx.open_judge(judge_cfg, prompts=[VERIFY], evidence=store)
        model_cfg = ctx.config.get("model") if ctx.config is not None else None
        reward = BinaryRARReward(judge=judge, store=store, settings=self.settings, prefix=response_prefix(model_cfg))
        ctx.logger.info("binary_rar reward: top_k=%d judge=%s evidence=%s", self.settings.top_k,
                        judge.describe().get("model"), store.describe().get("label"))
        return reward

    def components(self, reward: BinaryRARReward) -> dict[str, dict[str, Any]]:
        s = reward.settings
        retrieval = {"kind": "retrieval", "backend": "sqlite-fts5-bm25", "model": None, "revision": None,
                     "stand_in": True, "label": "FTS5 BM25 over the row's articles", "k": s.top_k, "query": "the response",
                     "note": "the evidence store's BM25 over the row's title articles stands in for the release's "
                             "rank_bm25 over 512-token chunks of each prompt's cached documents"}
        settings = self.settings_component(reward, guards=[], verify_prompt=f"{VERIFY.name}@{VERIFY.version}",
                                           response_prefix=reward.prefix, differences=differences(s))
        return {"judge": dict(reward.judge.describe()), "evidence": dict(reward.store.describe()),
                "retrieval": retrieval, "settings": settings}


METHOD = BinaryRARMethod

__all__ = ["BINARY_RAR_DEFAULTS", "BinaryRARMethod", "BinaryRARReward", "BinaryRARSettings", "DIAGNOSTIC_KEYS",
           "METHOD", "response_of"]

"""`rlcr`: RLCR (Damani et al., arXiv 2507.16806; damanimehul/RLCR) as an out-of-tree
factrl-harness method.

GRPO on correctness plus a Brier-score term on the confidence the model states after its answer,
which trains calibrated uncertainty. The release's reward is a weighted sum of five terms (format,
accuracy, 1 - Brier, and two 1e-6 confidence terms); a completion without a readable stated
confidence has no signal by default. It uses only the public method interface (settings_class). See README.md.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core import method as _interface
from factrl.harness.core.answers import STRICT_VERSION
from factrl.harness.core.method import FormatWarmup, Method, RunContext

from .fidelity import differences
from .prompt import PROMPT_ADDITION
from .reward import DIAGNOSTIC_KEYS, RLCR_DEFAULTS, RLCRReward, RLCRSettings
from .scoring import paper_reward, stated_confidence, terms
from .warmup import ANALYSIS, target as warmup_target

WARMUP_NOTE = ("the SFT stage of the paper's SFT+RLCR variant, shortened: a few supervised steps on the policy's own "
               "greedy answers in the tabc format with confidences drawn at random (no gold), a stand-in for a model "
               "that does not follow the format from the instruction alone")

REQUIRED_INTERFACE = 7
if getattr(_interface, "INTERFACE_VERSION", 1) < REQUIRED_INTERFACE:
    raise ImportError(f"factrl-rlcr needs factrl-harness method interface version >= {REQUIRED_INTERFACE} "
                      f"(settings_class, prompt_addition, format_warmup); this harness has {getattr(_interface, 'INTERFACE_VERSION', 1)}: "
                      f"upgrade factrl-harness")


class RLCRMethod(Method):
    name = "rlcr"
    label = "RLCR"
    algorithm = "grpo"
    description = "correctness plus a Brier term on the stated confidence (calibration rewards; GRPO)"
    version = "3"  # 3: the format warm-up (format_warmup) where the model asks for it; 2: the prompt addition
    config_defaults = RLCR_DEFAULTS
    settings_class = RLCRSettings
    # The release's request for <analysis> and <confidence> after the answer (prompt.py, from
    # TABC_LONG, system_prompts.py:19-20,29 @8904bed), appended to the shared system prompt in
    # training, evaluation and the probe (interface 5).
    prompt_addition = PROMPT_ADDITION
    # The release's engine: its own GRPO trainer (GRPO_Trainer.py) on TRL@69ad852 with
    # configs/Qwen-7B/hotpot/RLCR.yaml. Registered as `protocol/method/rlcr`; the shared protocol keeps
    # LR, KL, T, G, LoRA and steps (README "Training engine").
    protocol_defaults = {"train": {
        "optim": "adamw_torch",             # not set: transformers' AdamW
        "adam_betas": [0.9, 0.999],         # not set: transformers' defaults
        "weight_decay": 0.0,
        "lr_scheduler": "constant_with_warmup",  # RLCR.yaml:30
        "lr_scheduler_kwargs": {},
        "warmup_ratio": 0.05,               # RLCR.yaml:55
        "loss_type": "bnpo",                # arguments.py:236-237 default; GRPO_Trainer.py:805-806
        "entropy_coef": 0.0,
        "kl_bias_correction": False,        # GRPO_Trainer.py:800-801 beta * k3, no importance weight (beta 0: RLCR.yaml:16)
        "scale_rewards": "none",            # RLCR.yaml:48 scale_rewards false (GRPO_Trainer.py:685-688)
        "advantage_std_floor": 0.0,
        "advantage_epsilon": 1.0e-4,        # GRPO_Trainer.py:688 (unused without scaling)
        "epsilon_low": 0.2,                 # arguments.py:125-126 epsilon 0.2
        "epsilon_high": 0.2,                # arguments.py:130-131 epsilon_high None -> epsilon (GRPO_Trainer.py:298-299)
        "vllm": {"importance_sampling_correction": False},  # GRPO_Trainer.py:786-798: no vLLM ratio
    }}

    def build_reward(self, ctx: RunContext) -> RLCRReward:
        from factrl.harness.core.prompts import response_prefix

        model_cfg = ctx.config.get("model") if ctx.config is not None else None
        reward = RLCRReward(settings=self.settings, prefix=response_prefix(model_cfg))
        ctx.logger.info("rlcr reward: format=%s correctness=%s missing_confidence=%s weights=%s",
                        self.settings.format_pattern, self.settings.correctness, self.settings.missing_confidence,
                        self.settings.weights)
        return reward

    def format_warmup(self) -> FormatWarmup:
        """The SFT stage of SFT+RLCR (warmup.py), run by the harness where `model.format_warmup` is true."""
        w = self.settings.format_warmup
        pattern, spread = self.settings.format_pattern, tuple(w.confidence)
        return FormatWarmup(
            steps=w.steps, examples=w.examples, batch_size=w.batch_size, learning_rate=w.learning_rate,
            target=lambda turn, *, question, rng: warmup_target(turn, question=question, rng=rng, pattern=pattern,
                                                               confidence=spread),
            label="SFT format warm-up (SFT+RLCR)", note=WARMUP_NOTE,
            facts={"confidence": list(spread), "analysis": ANALYSIS, "format_pattern": pattern,
                   "answers": "the policy's own greedy answer (no gold)"})

    def components(self, reward: RLCRReward) -> dict[str, dict[str, Any]]:
        s = reward.settings
        verifier = {"kind": "verifier", "backend": "rule", "model": None, "revision": None, "stand_in": False,
                    "label": {"exact": "normalised exact match (released)", "matcher": "protocol matcher",
                              "strict": f"strict accuracy v{STRICT_VERSION}"}[s.correctness]}
        settings = self.settings_component(reward, guards=s.guards, response_prefix=reward.prefix,
                                           differences=differences(s))
        return {"verifier": verifier, "settings": settings}


METHOD = RLCRMethod

__all__ = ["DIAGNOSTIC_KEYS", "METHOD", "RLCRMethod", "RLCRReward", "RLCRSettings", "RLCR_DEFAULTS", "paper_reward",
           "stated_confidence", "terms"]

"""`truthrl`: TruthRL (Wei et al., arXiv 2509.25760) as an out-of-tree factrl-harness method.

GRPO with a ternary reward: +1 for a correct answer, 0 for an abstention, -1 for a wrong one (a
hallucination), correctness decided by an exact match or, failing that, an LLM judge against
each gold answer. It uses only the public method interface (settings_class, the judge client
through RunContext.open_judge). See README.md.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core import method as _interface
from factrl.harness.core.method import Method, RunContext

from .fidelity import differences
from .prompts import GRADE, PAPER_JUDGE
from .reward import DIAGNOSTIC_KEYS, TRUTHRL_DEFAULTS, TruthRLReward, TruthRLSettings
from .scoring import abstains, first_decision, release_normalize, verdict

REQUIRED_INTERFACE = 3
if getattr(_interface, "INTERFACE_VERSION", 1) < REQUIRED_INTERFACE:
    raise ImportError(f"factrl-truthrl needs factrl-harness method interface version >= {REQUIRED_INTERFACE} "
                      f"(settings_class); this harness has {getattr(_interface, 'INTERFACE_VERSION', 1)}: "
                      f"upgrade factrl-harness")


class TruthRLMethod(Method):
    name = "truthrl"
    label = "TruthRL"
    algorithm = "grpo"
    description = "ternary reward: +1 correct, 0 abstain, -1 wrong, by exact match then an LLM judge (GRPO)"
    version = "1"
    config_defaults = TRUTHRL_DEFAULTS
    settings_class = TruthRLSettings
    # The release's training engine (README "Training engine"): verl in the copy of
    # facebookresearch/TruthRL at muyupan/TruthRL@1424295, run by train_grpo.sh. Registered as
    # `protocol/method/truthrl`; the shared protocol keeps LR, KL, T, G, LoRA and steps.
    protocol_defaults = {
        "train": {
            "optim": "adamw_torch",           # verl/workers/fsdp_workers.py:433-437 optim.AdamW, betas (0.9, 0.999)
            "adam_betas": [0.9, 0.999],
            "weight_decay": 0.01,             # verl/trainer/config/actor/actor.yaml:123
            "lr_scheduler": "constant_with_warmup",  # fsdp_workers.py:442-455, dp_actor.yaml:48 warmup_style constant
            "lr_scheduler_kwargs": {},
            "warmup_ratio": 0.0,              # actor.yaml:117 lr_warmup_steps_ratio 0.0
            # actor.yaml:69 token-mean per micro-batch, scaled by 1 / accumulation (dp_actor.py:411-416,462);
            # train_grpo.sh:32 ppo_micro_batch_size_per_gpu=1, so each sequence's token mean, averaged: TRL's grpo
            "loss_type": "grpo",
            "entropy_coef": 0.0,              # train_grpo.sh:36 entropy_coeff=0
            "kl_bias_correction": False,      # train_grpo.sh:33-35 k3 (low_var_kl) KL loss, no importance weight
            "scale_rewards": "group",         # verl/trainer/ppo/core_algos.py:265-266 norm_adv_by_std_in_grpo
            "advantage_std_floor": 0.0,
            "advantage_epsilon": 1.0e-6,      # core_algos.py:265 epsilon=1e-6
            "epsilon_low": 0.2,               # actor.yaml:33-39 clip_ratio 0.2
            "epsilon_high": 0.2,
            "vllm": {"importance_sampling_correction": False},  # no rollout correction set in train_grpo.sh
        },
        # The judge the release's reward called (truthrl_qa.py:418,440); any other is a substitute.
        "judge": {"paper_model": PAPER_JUDGE},
    }

    def build_reward(self, ctx: RunContext) -> TruthRLReward:
        from factrl.harness.core.prompts import response_prefix

        settings = self.settings
        judge = None
        if settings.verifier == "judge":
            judge = ctx.open_judge(ctx.service_config("judge", "truthrl"), prompts=[GRADE])
        model_cfg = ctx.config.get("model") if ctx.config is not None else None
        reward = TruthRLReward(settings=settings, judge=judge, prefix=response_prefix(model_cfg))
        ctx.logger.info("truthrl reward: verifier=%s abstention=%s values=%s/%s/%s", settings.verifier,
                        settings.abstention, settings.correct, settings.abstain, settings.wrong)
        return reward

    def components(self, reward: TruthRLReward) -> dict[str, dict[str, Any]]:
        s = reward.settings
        out: dict[str, dict[str, Any]] = {}
        if reward.judge is not None:
            out["judge"] = dict(reward.judge.describe())
        else:
            out["verifier"] = {"kind": "verifier", "backend": s.verifier, "model": None, "revision": None,
                               "stand_in": s.verifier == "matcher",
                               "label": "exact match (released rule variant)" if s.verifier == "exact"
                               else "protocol matcher",
                               **({"note": "the protocol's matcher stands in for TruthRL's LLM judge"}
                                  if s.verifier == "matcher" else {})}
        out["settings"] = self.settings_component(reward, guards=s.guards, grade_prompt=f"{GRADE.name}@{GRADE.version}",
                                                  response_prefix=reward.prefix, differences=differences(s))
        return out


METHOD = TruthRLMethod

__all__ = ["DIAGNOSTIC_KEYS", "METHOD", "TRUTHRL_DEFAULTS", "TruthRLMethod", "TruthRLReward", "TruthRLSettings",
           "abstains", "first_decision", "release_normalize", "verdict"]

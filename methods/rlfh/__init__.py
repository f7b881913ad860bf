"""`rlfh`: fine-grained judge feedback as per-token PPO rewards (Wen et al., ACL Findings 2025,
arXiv 2406.12221; AlignRM/RLFH @78cd846). See README.md in this folder and BASELINES 3.

The judge splits each response into atomic statements per sentence, labels every statement
Correct / Vague / Wrong against evidence passages and rates its informativeness 1..5; the
truthfulness reward sits on the statement's last token, the informativeness reward on its
sentence's last token (reward.py, placement.py). Trained by the PPO engine (`algorithm: ppo`):
the rewards are per-token rewards, not returns.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.errors import ConfigError
from factrl.harness.method import Method, RunContext

from .prompts import PROMPTS
from .reward import DIAGNOSTIC_KEYS, RLFHReward
from .settings import CONSTANTS, RLFHSettings


class RLFH(Method):
    name = "rlfh"
    label = "RLFH"
    algorithm = "ppo"
    description = "judge-extracted atomic statements: truthfulness and informativeness rewards on their tokens (PPO)"
    version = "1"
    settings_class = RLFHSettings

    def build_reward(self, ctx: RunContext) -> RLFHReward:
        """Settings, evidence store and judge (cheapest first), with their cleanups registered."""
        cfg = ctx.config
        settings = self.settings
        evidence_cfg = ctx.service_config("evidence", "rlfh")
        judge_cfg = ctx.service_config("judge", "rlfh")
        if ctx.tokenizer is None:
            raise ConfigError("method=rlfh places rewards on tokens and needs the policy tokenizer")

        store = ctx.open_evidence(evidence_cfg)
        judge = ctx.open_judge(judge_cfg)
        from factrl.harness.prompts import response_prefix

        reward = RLFHReward(tokenizer=ctx.tokenizer, judge=judge, store=store, settings=settings,
                            prefix=response_prefix(cfg.get("model")))
        ctx.logger.info("rlfh reward: constants=%s granularity=%s judge=%s evidence=%s k=%d", settings.constants,
                        settings.granularity, judge.describe().get("model"), store.describe().get("label"),
                        settings.evidence_k)
        return reward

    def components(self, reward: RLFHReward) -> dict[str, dict[str, Any]]:
        """judge, evidence and settings: what besides version 1 changes a result."""
        return {"judge": dict(reward.judge.describe()), "evidence": dict(reward.store.describe()),
                "settings": settings_component(reward)}


def settings_component(reward: RLFHReward) -> dict[str, Any]:
    s, table = reward.settings, reward.settings.table
    return {"kind": "settings", "backend": None, "model": None, "revision": None, "stand_in": False,
            "label": f"RLFH constants {s.constants}", "constants": s.constants,
            "verdict_values": dict(table.verdict), "info_values": {str(k): v for k, v in table.info.items()},
            "w_info": table.w_info, "w_truth": table.w_truth, "eps": table.eps, "mu": table.mu,
            "granularity": s.granularity, "evidence_k": s.evidence_k, "gold_material": s.gold_material,
            "drop_hedges": s.drop_hedges, "alignment_threshold": s.alignment_threshold, "splitter": s.splitter,
            "prompts": {p.name: p.version for p in reward.prompts},
            "max_failed_share": getattr(getattr(reward.judge, "settings", None), "max_failed_share", None)}


METHOD = RLFH

__all__ = ["CONSTANTS", "DIAGNOSTIC_KEYS", "METHOD", "PROMPTS", "RLFH", "RLFHReward", "RLFHSettings",
           "settings_component"]

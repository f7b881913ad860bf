"""`forag`: sub-claim verification rewards with PPO and a critic (Cai et al., KDD 2024, arXiv
2406.13779; no public training code). See README.md in this folder and docs/BASELINES.md §4.

The judge splits each sentence of the completion into sub-claims and checks each against the
row's evidence passages; each verified sub-claim is worth +1 (supported) / -1, the sentence's
mean lands on its last token, and the PPO engine (`algorithm: ppo`) turns these token rewards
into GAE advantages with its critic. No correctness term. Any failed judge item of a completion
makes it no-signal; `dedupe_statements` / `max_rewarded_statements` are named guards (off by default).
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.method import Method, RunContext, settings_entry

from .fidelity import differences
from .prompts import DECOMPOSE, VERIFY
from .reward import CONTEXT_SENTENCES, DIAGNOSTIC_KEYS, FoRAGReward
from .settings import FoRAGSettings


def check_titles(rows: list[dict], settings: FoRAGSettings, pool: str = "?") -> int:
    """Rows without a `title` (they get no signal; factrl.harness.services.evidence.check_pool_titles): none
    titled, or with require_title any untitled, is a DataError."""
    from factrl.harness.services.evidence import check_pool_titles

    return check_pool_titles(rows, method="forag", pool=pool, purpose="checks sub-claims against the articles "
                             "a row's `title` names", require_title=settings.require_title)


class FoRAG(Method):
    name = "forag"
    label = "FoRAG"
    algorithm = "ppo"
    description = "judge-split sub-claims verified against evidence, rewards on sentence-end tokens (PPO + critic)"
    version = "2"  # README "Changelog"
    settings_class = FoRAGSettings
    fidelity = "reconstructed"  # no public training code: the reward is this harness's design (README.md)

    def build_reward(self, ctx: RunContext) -> FoRAGReward:
        """Checks settings, titles, the evidence store and the judge (cheapest first) before
        training, and registers their cleanups."""
        if ctx.tokenizer is None:
            raise ConfigError("method=forag needs the policy tokenizer in the run context (token placement)")
        settings = self.settings
        missing = check_titles(list(ctx.pool or []), settings, ctx.pool_name)
        if missing:
            ctx.logger.warning("forag: %d of %d pool rows have no title; they train without a signal (counted "
                               "under rewards/forag/no_evidence)", missing, len(ctx.pool))
        evidence_cfg = ctx.service_config("evidence", "forag")
        judge_cfg = ctx.service_config("judge", "forag")

        store = ctx.open_evidence(evidence_cfg)
        # The prompts are registered so the judge component lists them (and judge=reference checks
        # their reference answers) before the first step; the store serves reference answers.
        judge = ctx.open_judge(judge_cfg, prompts=[DECOMPOSE, VERIFY], evidence=store)
        reward = FoRAGReward(tokenizer=ctx.tokenizer, judge=judge, store=store, settings=settings,
                             k=int(evidence_cfg.k))
        ctx.logger.info("forag reward: aggregation=%s placement=%s dedupe_statements=%s max_rewarded_statements=%s "
                        "positive_cap=%s judge=%s evidence=%s k=%d", settings.aggregation, settings.placement,
                        settings.dedupe_statements, settings.max_rewarded_statements, settings.positive_cap,
                        judge.describe().get("model"), store.describe().get("label"), reward.k)
        return reward

    def components(self, reward: FoRAGReward) -> dict[str, dict[str, Any]]:
        """judge, evidence and settings: what besides the version changes a FoRAG result."""
        return {"judge": dict(reward.judge.describe()), "evidence": dict(reward.store.describe()),
                "settings": settings_component(reward)}


def settings_component(reward: FoRAGReward) -> dict[str, Any]:
    """Every setting (the guards included), the fixed design facts, the prompts and the deliberate
    differences (fidelity.py). `fidelity: reconstructed`: no public code, the reward is ours."""
    s = reward.settings
    label = f"FoRAG settings ({s.aggregation}, {s.placement}{', guarded' if s.guarded else ''})"
    return settings_entry(label, {
            "fidelity": "reconstructed", **s.to_dict(), "guarded": s.guarded, "guards": s.guards, "k": reward.k,
            "context_sentences": CONTEXT_SENTENCES, "correctness_term": False, "judge_failure": "no_signal",
            "max_failed_share": getattr(getattr(reward.judge, "settings", None), "max_failed_share", None),
            "decompose_prompt": _prompt_id(reward.decompose_prompt), "verify_prompt": _prompt_id(reward.verify_prompt),
            "differences": differences(s)})


def _prompt_id(prompt: Any) -> str:
    return f"{getattr(prompt, 'name', type(prompt).__name__)}@{getattr(prompt, 'version', '?')}"


METHOD = FoRAG

__all__ = ["DECOMPOSE", "DIAGNOSTIC_KEYS", "METHOD", "VERIFY", "FoRAG", "FoRAGReward", "FoRAGSettings",
           "check_titles", "settings_component"]

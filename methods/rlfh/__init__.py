"""`rlfh`: fine-grained judge feedback as per-token PPO rewards (Wen et al., ACL Findings 2025,
arXiv 2406.12221; AlignRM/RLFH @78cd846). See README.md in this folder ("Fidelity") and
docs/BASELINES.md §3.

The judge picks each response's fact-holding sentences, echoes them and splits them into atomic
statements (prompts.py), labels every statement Correct / Vague / Wrong against BM25-ranked
evidence sections (retrieval.py) and rates its informativeness 1..5; the truthfulness reward
sits on the statement's token, the informativeness reward on its sentence's last matched token
(placement.py, scoring.py). Trained by the PPO engine (`algorithm: ppo`): the rewards are
per-token rewards, not returns.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.method import Method, RunContext, settings_entry

from . import placement, reference
from .prompts import PROMPTS, prompts_for
from .reward import DIAGNOSTIC_KEYS, RLFHReward
from .settings import CONSTANTS, HEDGE_PHRASES, RLFHSettings


class RLFH(Method):
    name = "rlfh"
    label = "RLFH"
    algorithm = "ppo"
    description = "judge-extracted atomic statements: truthfulness and informativeness rewards on their tokens (PPO)"
    # 2: the released prompts, decoding and parsers, echo placement, BM25 sections with the gold
    # sentence ranked, the released hedge filter, train_sh constants, the failure rule, guards.
    version = "2"
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
        judge = ctx.open_judge(judge_cfg, prompts=prompts_for(settings.parser, settings.decoding), evidence=store)
        from factrl.harness.core.prompts import response_prefix

        reward = RLFHReward(tokenizer=ctx.tokenizer, judge=judge, store=store, settings=settings,
                            prefix=response_prefix(cfg.get("model")))
        ctx.logger.info("rlfh reward: constants=%s granularity=%s judge=%s evidence=%s max_secs=%d judge_failure=%s",
                        settings.constants, settings.granularity, judge.describe().get("model"),
                        store.describe().get("label"), settings.max_secs, settings.judge_failure)
        return reward

    def components(self, reward: RLFHReward) -> dict[str, dict[str, Any]]:
        """judge, evidence and settings: what besides the method version changes a result."""
        return {"judge": dict(reward.judge.describe()), "evidence": dict(reward.store.describe()),
                "settings": settings_component(reward)}


# Deliberate differences from the release that no setting switches off (README "Fidelity").
DIFFERENCES = (
    {"setting": "material blocks", "original": "the response and statements pasted into the prompts (annotate.py:249-283)",
     "ours": "each in a material block under the harness's material rule; the released words otherwise verbatim"},
    {"setting": "judged text", "original": "the decoded policy output", "ours": "the completion's think and answer "
     "text without tags, one section per line"},
    {"setting": "echo location", "original": "the echo's longest common substring with the output, any length "
     "(reward.py:166)", "ours": "the same run, refused (no signal) under echo_min_share of the echo"},
    {"setting": "hedged sentences", "original": "judged, then dropped (reward.py:94)", "ours": "dropped before "
     "verify / assess (same reward, fewer calls)"},
    {"setting": "materials", "original": "HotpotQA context paragraphs + gold sentence + Wikipedia pages (dataset.py:105-124)",
     "ours": "gold sentence + the row's store articles"},
    {"setting": "transport retries", "original": "forever, 1 s apart (completion.py:82-99)",
     "ours": "judge.max_retries with backoff, then the item fails"},
)
# The release's value of each option (README "Fidelity"); a run choosing another one records it.
RELEASED = {"constants": "train_sh", "granularity": "token", "max_secs": 3, "max_words_per_sec": 64,
            "gold_material": True, "drop_hedges": True, "parser": "released", "decoding": "released", "tries": 4,
            "judge_failure": "released", "dedupe_statements": False, "max_rewarded_statements": None,
            "answer_gate": "none", "positive_cap": "none", "answer_once": False}


def differences(settings: RLFHSettings) -> list[dict[str, Any]]:
    """DIFFERENCES plus every option set to something other than the release's value."""
    chosen = [{"setting": key, "original": value, "ours": getattr(settings, key)} for key, value in RELEASED.items()
              if getattr(settings, key) != value]
    return [dict(d) for d in DIFFERENCES] + chosen


def settings_component(reward: RLFHReward) -> dict[str, Any]:
    s, table = reward.settings, reward.settings.table
    return settings_entry(f"RLFH constants {s.constants}" + (" (guarded)" if s.guarded else ""), {
            "constants": s.constants, "verdict_values": dict(table.verdict),
            "info_values": {str(k): v for k, v in table.info.items()}, "w_info": table.w_info,
            "w_truth": table.w_truth, "eps": table.eps, "mu": table.mu, "granularity": s.granularity,
            "max_secs": s.max_secs, "max_words_per_sec": s.max_words_per_sec, "gold_material": s.gold_material,
            "drop_hedges": s.drop_hedges, "hedge_phrases": list(HEDGE_PHRASES), "parser": s.parser,
            "decoding": s.decoding, "tries": s.tries, "echo_min_share": s.echo_min_share,
            "judge_failure": s.judge_failure, "dedupe_statements": s.dedupe_statements,
            "max_rewarded_statements": s.max_rewarded_statements, "answer_gate": s.answer_gate,
            "positive_cap": s.positive_cap, "answer_once": s.answer_once, "guarded": s.guarded, "guards": s.guards,
            "alignment_threshold": s.alignment_threshold, "splitter": s.splitter,
            "prompts": {p.name: {"version": p.version, "source": p.source, "decoding": p.decoding.given()}
                        for p in reward.prompts},
            "differences": differences(s),
            "max_failed_share": getattr(getattr(reward.judge, "settings", None), "max_failed_share", None)})


METHOD = RLFH

__all__ = ["CONSTANTS", "DIAGNOSTIC_KEYS", "DIFFERENCES", "METHOD", "RELEASED", "differences", "PROMPTS", "RLFH", "RLFHReward", "RLFHSettings",
           "placement", "reference", "settings_component"]

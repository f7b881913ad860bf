"""`knowrl`: judge-graded correctness plus a knowledge-base factuality term (Ren et al., arXiv
2506.19807; zjunlp/KnowRL@f75b0bb, its HEAD). See README.md in this folder (its Fidelity table
lists every setting against the release) and docs/BASELINES.md §5.

format (+1 / -1) + final, final = +2 correct / +1 refusal / -1 incorrect by the judge's SimpleQA
grade, and for a wrong non-refusal -1 + the supported fraction (times FActScore's length
penalty) of the reasoning's atomic facts, checked by NLI against the row's evidence passages.
The scalar is broadcast to every completion token (sequence-level GRPO).
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.method import Method, RunContext, settings_entry

from .prompts import prompts_for
from .reward import DIAGNOSTIC_KEYS, KnowRLReward
from .scoring import RETRIEVALS, KnowRLSettings

GTR_ID = "sentence-transformers/gtr-t5-large"


def check_titles(rows: list[dict], settings: KnowRLSettings, pool: str = "?") -> int:
    """Rows without a `title` (factrl.harness.services.evidence.check_pool_titles); with require_title, any
    is a DataError before training starts. A pool with none titled is allowed without it (every
    fact term then scores unsupported, as require_title=false says)."""
    from factrl.harness.services.evidence import check_pool_titles

    return check_pool_titles(rows, method="knowrl", pool=pool, purpose="checks facts against the articles a "
                             "row's `title` names", require_any=False, require_title=settings.require_title,
                             without="score those rows' facts as unsupported")


class KnowRL(Method):
    name = "knowrl"
    label = "KnowRL"
    algorithm = "grpo"
    description = "judge-graded correctness (+2/+1/-1), format, and NLI-checked atomic facts for wrong answers (GRPO)"
    version = "2"
    settings_class = KnowRLSettings

    def build_reward(self, ctx: RunContext) -> KnowRLReward:
        """Checks everything a user can get wrong before training (settings, titles, evidence
        store, NLI labels, judge), cheapest first; registers the services' cleanups."""
        settings = self.settings
        check_titles(list(ctx.pool or []), settings, ctx.pool_name)
        evidence_cfg = ctx.service_config("evidence", "knowrl")
        judge_cfg = ctx.service_config("judge", "knowrl")
        from factrl.harness.services.nli import load_nli
        from factrl.harness.core.prompts import response_prefix

        store = ctx.open_evidence(evidence_cfg)
        nli = load_nli(settings.nli)
        grade, facts = prompts_for(settings.grade_parse)
        # Registered up front: the judge component lists both from the first step, and
        # judge=reference answers them from the run's evidence store.
        judge = ctx.open_judge(judge_cfg, prompts=[grade, facts], evidence=store)
        model_cfg = ctx.config.get("model") if ctx.config is not None else None
        reward = KnowRLReward(judge=judge, store=store, nli=nli, settings=settings, k=int(evidence_cfg.k),
                              grade_prompt=grade, facts_prompt=facts, prefix=response_prefix(model_cfg))
        ctx.logger.info("knowrl reward: variant=%s judge=%s nli=%s evidence=%s k=%d", settings.variant,
                        getattr(judge, "describe", dict)().get("model"), nli.describe().get("label"),
                        store.describe().get("label"), reward.k)
        return reward

    def components(self, reward: KnowRLReward) -> dict[str, dict[str, Any]]:
        """judge, nli, evidence, retrieval and settings: what besides the method version changes a result."""
        return {"judge": dict(reward.judge.describe()), "nli": dict(reward.nli.describe()),
                "evidence": dict(reward.store.describe()), "retrieval": retrieval_component(reward),
                "settings": settings_component(reward)}


def retrieval_component(reward: KnowRLReward) -> dict[str, Any]:
    """BM25 over the row's articles ranks the passages per fact: a stand-in for KnowRL's GTR."""
    return {"kind": "retrieval", "backend": "bm25", "model": None, "revision": None, "stand_in": True,
            "label": "BM25 passage ranking", "k": reward.k, "query": "title + ' ' + fact",
            "note": f"SQLite FTS5 BM25 over the row's title articles ranks the passages for each fact, in place of "
                    f"KnowRL's {GTR_ID} dense ranking (no GTR weights offline)"}


def settings_component(reward: KnowRLReward) -> dict[str, Any]:
    from .fidelity import differences

    s = reward.settings
    return settings_entry("KnowRL settings", {
            "variant": s.variant, "grade_parse": s.grade_parse,
            "answer_guard": s.answer_guard, "grade_check": s.grade_check, "guards": guards(s),
            "correct": s.correct, "refusal": s.refusal,
            "incorrect": s.incorrect, "format_ok": s.format_ok, "format_bad": s.format_bad,
            "threshold": s.threshold, "gamma": s.gamma, "v1_cap": s.v1_cap, "require_title": s.require_title,
            "k": reward.k, "max_failed_share": getattr(getattr(reward.judge, "settings", None), "max_failed_share", None),
            "grade_prompt": _prompt_id(reward.grade_prompt), "facts_prompt": _prompt_id(reward.facts_prompt),
            "response_prefix": reward.prefix,
            # The deliberate differences from zjunlp/KnowRL@f75b0bb (README, Fidelity), so tables can mark them.
            "differences": differences(s, dict(reward.nli.describe()))})


def guards(settings: KnowRLSettings) -> list[str]:
    """The guards this run turned on (docs/CONTRACTS.md "Guards"; none = KnowRL's reward)."""
    return [f"{key}={getattr(settings, key)}" for key in ("answer_guard", "grade_check") if getattr(settings, key) != "none"]


def _prompt_id(prompt: Any) -> str:
    return f"{getattr(prompt, 'name', type(prompt).__name__)}@{getattr(prompt, 'version', '?')}"


METHOD = KnowRL

__all__ = ["DIAGNOSTIC_KEYS", "METHOD", "RETRIEVALS", "KnowRL", "KnowRLReward", "KnowRLSettings",
           "check_titles", "guards", "retrieval_component", "settings_component"]

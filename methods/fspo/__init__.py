"""`fspo`: factuality-aware step-wise policy optimisation (Li & Ng, NeurIPS 2025, arXiv 2505.24630).

GRPO on the answer score, with each reasoning sentence judged by an NLI model (HHEM-2.1-Open)
against the question's evidence passages. Default (the released code): the sign of each
token's advantage follows the factuality of its sentence, the magnitude the outcome
(`shape_advantages`); option `variant=step_reward`: the paper's step reward added to the
answer reward per token. See README.md in this folder.
"""
from __future__ import annotations

import logging
from typing import Any

from factrl.harness.core.config_values import as_container
from factrl.harness.core.errors import ConfigError, DataError, HarnessError
from factrl.harness.core.method import Method, RewardOutput, RunContext, settings_entry
from factrl.harness.core.settings import defaults_from_yaml

from .advantage import flip_advantages, pad_masks
from .reward import FSPOReward, format_ok
from .settings import FSPOSettings

log = logging.getLogger(__name__)


def check_pool_titles(rows: list[dict], pool_name: str) -> int:
    """How many pool rows have no `title` (factrl.harness.services.evidence.check_pool_titles); a DataError
    when none has one (no evidence at all)."""
    from factrl.harness.services.evidence import check_pool_titles as check

    # FSPO has no require_title setting: an untitled row trains without a step signal.
    return check(rows, method="fspo", pool=pool_name, purpose="judges reasoning against the articles a row's "
                 "`title` names", require_title=False)


def open_evidence_store(evidence_cfg: Any) -> Any:
    """The evidence store `cfg.evidence` names, or a one-line error naming the setting and the fix."""
    from factrl.harness.services import evidence

    if evidence_cfg is None:
        raise ConfigError("method=fspo needs an evidence store: run with evidence=demo, or evidence=file "
                          "evidence.store=STORE.sqlite3 (built by `harness evidence build`).")
    opener = getattr(evidence, "open_from_config", None) or evidence.open_evidence
    try:
        return opener(evidence_cfg)
    except HarnessError as err:  # one line, led by the setting to fix
        kind = DataError if isinstance(err, DataError) else ConfigError
        raise kind(f"evidence.store: {err}") from None


def reward_from_config(settings: FSPOSettings | Any, *, tokenizer: Any, evidence_cfg: Any = None, nli: Any = None,
                       store: Any = None, prefix: str = "", train: Any = None) -> FSPOReward:
    """The reward callable for FSPO settings (or a `method` mapping, parsed over the YAML
    defaults); opens the NLI scorer and the evidence store unless given (tests pass their own)."""
    if not isinstance(settings, FSPOSettings):
        settings = FSPOSettings.from_mapping(settings)
    if nli is None:
        from factrl.harness.services.nli import load_nli

        nli = load_nli(settings.nli)
    if store is None:
        store = open_evidence_store(evidence_cfg)
    evidence = as_container(evidence_cfg) if evidence_cfg is not None else defaults_from_yaml("evidence/demo.yaml")
    return FSPOReward(tokenizer=tokenizer, nli=nli, store=store, settings=settings, k=int(evidence["k"]),
                      prefix=prefix, train=as_container(train))


class FSPO(Method):
    name = "fspo"
    label = "FSPO"
    algorithm = "grpo"
    description = "HHEM-judged reasoning sentences flip token advantage signs (released FSPO code; GRPO)"
    version = "2"  # 2: a format failure scores 0 as released (was -2); HHEM bf16 autocast on CUDA
    settings_class = FSPOSettings

    def build_reward(self, ctx: RunContext) -> FSPOReward:
        if ctx.tokenizer is None:
            raise ConfigError("method=fspo needs the policy tokenizer in the run context (token alignment)")
        from factrl.harness.core.prompts import response_prefix

        cfg = ctx.config
        missing = check_pool_titles(list(ctx.pool or []), ctx.pool_name)  # before anything is opened
        if missing:
            ctx.logger.warning("fspo: %d of %d pool rows have no title; they train without a step signal "
                               "(mask 0, counted under rewards/fspo/no_title)", missing, len(ctx.pool))
        reward = reward_from_config(self.settings, tokenizer=ctx.tokenizer,
                                    evidence_cfg=cfg.get("evidence") if cfg is not None else None,
                                    prefix=(response_prefix(cfg.model) or "") if cfg is not None else "",
                                    train=cfg.get("train") if cfg is not None else None)
        ctx.logger.info("fspo reward: variant=%s threshold=%s nli=%s evidence=%s k=%d", reward.settings.variant,
                        reward.settings.threshold, reward.nli.describe().get("label"),
                        getattr(reward.store, "path", None), reward.k)
        return reward

    def shape_advantages(self, advantages, *, output: RewardOutput, mask, group_size: int):
        """sign_flip: A_t = |A_i| * sign(m_t) where m_t != 0, A_i elsewhere; (B, T) in and out.
        step_reward: unchanged (the step values are already in the token returns)."""
        if self.settings.variant != "sign_flip" or not output.extras:
            return advantages
        masks = pad_masks([e.get("mask") for e in output.extras], advantages.size(1))
        return flip_advantages(advantages, masks)

    def components(self, reward: FSPOReward) -> dict[str, dict[str, Any]]:
        """nli, evidence and settings: what besides the method version can change an FSPO result."""
        return {"nli": dict(reward.nli.describe()), "evidence": evidence_component(reward.store),
                "settings": settings_component(reward, reward.train)}


def evidence_component(store: Any) -> dict[str, Any]:
    """The store's own description (manifest hash; the demo store is marked a stand-in)."""
    describe = getattr(store, "describe", None)
    if describe is not None:
        return dict(describe())
    return {"kind": "evidence", "backend": type(store).__name__, "model": None, "revision": None, "stand_in": True,
            "label": "caller-supplied evidence", "manifest_hash": getattr(store, "manifest_hash", None),
            "note": f"a caller-supplied store ({type(store).__name__}) in place of the per-question Wikipedia store"}


def settings_component(reward: FSPOReward, train_cfg: dict[str, Any]) -> dict[str, Any]:
    """The reward and training settings that change FSPO scores, and this run's deliberate
    differences from the released code (`differences`, fidelity.py)."""
    from .fidelity import differences

    entry = settings_entry(f"FSPO settings ({reward.settings.variant})", {
        **{k: v for k, v in reward.settings.to_dict().items() if k != "nli"},  # the nli entry has it
        "evidence_k_used": reward.k, "answer_score": "harness matcher 0/1",
        "guards": [f"correctness={reward.settings.correctness}"] if reward.settings.correctness != "protocol" else [],
        "format_rule": "fspo_tags", "premise_join": "blank line",
        "differences": differences(reward.settings, dict(reward.nli.describe()))})
    for key in ("completions_per_question", "learning_rate", "beta", "temperature", "advantage_epsilon",
                "advantage_std_floor"):
        if key in train_cfg:
            entry["G" if key == "completions_per_question" else key] = train_cfg[key]
    return entry


METHOD = FSPO

__all__ = ["FSPO", "FSPOReward", "FSPOSettings", "METHOD", "check_pool_titles", "evidence_component", "format_ok",
           "reward_from_config", "settings_component"]

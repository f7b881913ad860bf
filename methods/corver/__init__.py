"""`corver`: corpus-grounded sentence rewards for GRPO (Fan et al., arXiv 2605.29648).

Response-level correctness and format rewards for every token, plus, for the tokens of
each sentence of the reasoning and answer, a reward from how often the sentence's subject
and object co-occur in a Wikipedia infini-gram index. See README.md in this folder.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.config import as_container
from factrl.harness.errors import ConfigError
from factrl.harness.method import Method, RunContext
from factrl.harness.rewards import ResponseRewardConfig

from .reward import CorpusRewardConfig
from .token_reward import CorVerReward, CorVerSettings




def reward_from_config(method_cfg: Any, *, tokenizer: Any, corpus_cfg: Any = None,
                       extractor: Any = None, counter: Any = None) -> CorVerReward:
    """The reward callable for a `method` config; opens the extractor and the counter unless
    given (tests pass their own). Nothing is opened when lambda_c = 0 (ablation A1)."""
    cfg = dict(as_container(method_cfg) or {})
    try:
        settings = CorVerSettings.from_mapping(cfg)
        response = ResponseRewardConfig.from_mapping(cfg)
        corpus = CorpusRewardConfig.from_mapping(cfg)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"method=corver: {err}") from None
    if settings.lambda_c != 0.0:
        if counter is None:
            from factrl.harness.corpus import open_counter

            if corpus_cfg is None or str(dict(as_container(corpus_cfg) or {}).get("backend", "none")) == "none":
                raise ConfigError("method=corver needs a corpus (corpus=demo or corpus=<your index>); "
                                  "with corpus=none only method.lambda_c=0 (ablation A1) runs.")
            counter = open_counter(corpus_cfg)
        if extractor is None:
            from .extractor import build_extractor

            try:
                extractor = build_extractor(cfg.get("extractor"))
            except ValueError as err:
                raise ConfigError(f"method.extractor: {err}") from None
    return CorVerReward(tokenizer=tokenizer, extractor=extractor, counter=counter, response=response,
                        corpus=corpus, settings=settings)


class CorVer(Method):
    name = "corver"
    algorithm = "grpo"
    description = "corpus co-occurrence sentence rewards mapped to tokens, plus correctness and format (GRPO)"
    version = "1"

    def build_reward(self, ctx: RunContext) -> CorVerReward:
        if ctx.tokenizer is None:
            raise ConfigError("method=corver needs the policy tokenizer in the run context (token alignment)")
        method_cfg = ctx.method_config if ctx.method_config is not None else self.config
        corpus_cfg = ctx.config.get("corpus") if ctx.config is not None else None
        reward = reward_from_config(method_cfg, tokenizer=ctx.tokenizer, corpus_cfg=corpus_cfg)
        ext = reward.extractor
        ctx.logger.info("corver reward: lambda_c=%s aggregation=%s extractor=%s corpus=%s",
                        reward.settings.lambda_c, reward.corpus.aggregation,
                        getattr(ext, "name", None), getattr(reward.counter, "description", None))
        return reward


METHOD = CorVer

__all__ = ["METHOD", "CorVer", "CorVerReward", "reward_from_config"]

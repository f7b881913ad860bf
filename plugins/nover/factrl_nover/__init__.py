"""`nover`: NOVER (Liu et al., arXiv 2505.16022) as an out-of-tree factrl-harness method.

The reward is the policy's own reasoning perplexity of the reference answer: no verifier,
judge or corpus. It uses only the public method interface (version 4: `kl_reference_adapter`,
the proxy as the KL reference; version 3: `settings_class` for its `method.*` options; version 2:
the policy handle in the reward, `setup_policy` / `on_checkpoint` for the proxy adapter). See
README.md.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core import method as _interface
from factrl.harness.core.errors import ConfigError
from factrl.harness.core.method import Method, RunContext, settings_entry

from .fidelity import differences
from .reward import NOVER_DEFAULTS, PROXY_ADAPTER, NoverReward, NoverSettings
from .scoring import efficiency_rewards, length_scale, parse_strict, rank_rewards, score_group

REQUIRED_INTERFACE = 4
if getattr(_interface, "INTERFACE_VERSION", 1) < REQUIRED_INTERFACE:
    raise ImportError(f"factrl-nover needs factrl-harness method interface version >= {REQUIRED_INTERFACE} "
                      f"(kl_reference_adapter; settings_class; policy access inside the reward); this harness has "
                      f"{getattr(_interface, 'INTERFACE_VERSION', 1)}: upgrade factrl-harness")


class NoverMethod(Method):
    name = "nover"
    label = "NOVER"
    algorithm = "grpo"
    description = "verifier-free: the policy's reasoning perplexity of the reference, ranked per group (GRPO)"
    # 2: the released perplexity texts and tokenisation, N_r with special tokens, ties as released,
    # the proxy as the KL reference, TRL's std scaling and the release's clip 0.1 / 0.2.
    version = "2"
    needs_policy = True   # the reward reads the policy (its proxy adapter)
    whole_groups = True   # ranks are within groups: every reward call must hold whole groups
    # `method.*` (plugins ship no configs/method/<name>.yaml); override with method.length_rule=paper etc.
    config_defaults = NOVER_DEFAULTS
    settings_class = NoverSettings  # parsed into self.settings when the method is built (interface 3)
    # The training engine's settings of the released code (thinkwee/NOVER@cb1a4ef), registered as
    # `protocol/method/nover` (the shared protocol keeps LR, KL, T, G, LoRA and steps; README "Fidelity").
    # config.py:295-337 builds TRL 0.16's GRPOConfig with no optimizer, scheduler or warmup, so
    # transformers' defaults apply: torch AdamW (0.9, 0.999), no weight decay, linear decay, no warmup.
    protocol_defaults = {"train": {
        "optim": "adamw_torch", "adam_betas": [0.9, 0.999], "weight_decay": 0.0,
        "lr_scheduler": "linear", "lr_scheduler_kwargs": {}, "warmup_ratio": 0.0,
        "loss_type": "bnpo",        # trainer.py:133 (per_token_loss * mask).sum() / mask.sum(), per device batch
        # config.py:65 defines SCALE_REWARDS = False but GRPOConfig (config.py:295-349) never gets it, so
        # TRL 0.16's scale_rewards=True holds: trainer.py:324-326 divides by the group std + 1e-4.
        "scale_rewards": "group",
        "advantage_std_floor": 0.0,
        "advantage_epsilon": 1.0e-4,  # trainer.py:326
        "epsilon_low": 0.1,         # config.py:66 EPSILON = 0.1 -> GRPOConfig(epsilon=...) (config.py:334)
        "epsilon_high": 0.2,        # config.py:67 EPSILON_HIGH = 0.2 (config.py:335)
        # TRL 0.16 (requirements.txt:2 trl==0.16.0) has no vLLM importance-sampling correction: none.
        "vllm": {"importance_sampling_correction": False},
    }}

    @property
    def kl_reference_adapter(self) -> str | None:
        """The proxy is the KL reference as released (`method.kl_reference: proxy`), else the base."""
        return self.settings.kl_adapter

    def build_reward(self, ctx: RunContext) -> NoverReward:
        if ctx.tokenizer is None:
            raise ConfigError("method=nover needs the policy tokenizer in the run context")
        cfg = ctx.config
        group = int(cfg.train.completions_per_question)
        ctx.logger.info("nover reward: length_rule=%s proxy=%s keep=%s weights=%s", self.settings.length_rule,
                        self.settings.proxy, self.settings.proxy_keep, self.settings.weights)
        return NoverReward(tokenizer=ctx.tokenizer, model_cfg=cfg.model, group_size=group, settings=self.settings,
                           save_steps=int(cfg.train.save_steps))

    def setup_policy(self, policy: Any) -> None:
        """The proxy: a frozen copy of the policy's adapter (NOVER section 4.2)."""
        if self.settings.proxy:
            policy.copy_adapter(PROXY_ADAPTER)

    def on_checkpoint(self, policy: Any, *, step: int) -> None:
        """proxy <- keep * proxy + (1 - keep) * policy at every checkpoint save (released code)."""
        if self.settings.proxy:
            policy.mix_adapter(PROXY_ADAPTER, keep=self.settings.proxy_keep)

    def components(self, reward: NoverReward) -> dict[str, dict[str, Any]]:
        """The proxy (the policy itself) and the settings: what besides version 1 changes a result."""
        s = reward.settings
        model = {k: reward.model_cfg.get(k) for k in ("name", "id", "revision")} if reward.model_cfg else {}
        proxy = {"kind": "proxy", "backend": "policy-adapter" if s.proxy else "policy", "model": model.get("id"),
                 "revision": model.get("revision"), "stand_in": False,
                 "label": f"policy proxy (keep {s.proxy_keep})" if s.proxy else "policy (no proxy)",
                 "policy_model": model.get("name"), "adapter": s.adapter, "keep": s.proxy_keep,
                 "update_every_steps": reward.save_steps,
                 "lora_modules_to_save": None,
                 "paper_difference": "the paper's LoRA also trains lm_head (modules_to_save); the harness's "
                                     "shared LoRA (docs/PROTOCOL.md §4, lora.*) has no modules_to_save, so the policy "
                                     "and its proxy adapt the projection modules only (docs/BASELINES.md §8 expected "
                                     "TRL 1.16 to reject lm_head; checked 2026-12-01, TRL 1.16 + PEFT 0.21 "
                                     "accept modules_to_save=[lm_head]); the proxy updates at every checkpoint "
                                     "(train.save_steps; the paper: 100)"}
        settings = settings_entry("NOVER settings", {
                    "length_rule": s.length_rule, "rank_ties": s.rank_ties,
                    "w_format": s.w_format, "w_reasoning": s.w_reasoning, "w_efficiency": s.w_efficiency,
                    "format_rule": "strict", "perplexity_texts": "released (thinkwee/NOVER@cb1a4ef utils.py:49-67)",
                    "target": "\\n<answer>\\n{primary answer}\\n</answer>", "reasoning_tokens": "with special tokens",
                    "kl_reference": s.kl_reference, "group_size": reward.group_size,
                    "answer_gate": s.answer_gate,
                    "guards": [f"answer_gate={s.answer_gate}"] if s.answer_gate != "none" else [],
                    "differences": differences(s, reward)})
        return {"proxy": proxy, "settings": settings}


__all__ = ["NOVER_DEFAULTS", "PROXY_ADAPTER", "NoverMethod", "NoverReward", "NoverSettings", "efficiency_rewards",
           "length_scale", "parse_strict", "rank_rewards", "score_group"]

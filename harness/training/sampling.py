"""Rollout sampling penalties: `train.top_k`, `train.repetition_penalty`, `train.presence_penalty`.

TRL's GRPOConfig has `top_k` and `repetition_penalty` for both rollout backends. It has no
presence penalty: vLLM's SamplingParams has one (passed through GRPOConfig.generation_kwargs),
transformers' generate has none. For HF rollouts `PresencePenalty` implements vLLM's (and
OpenAI's) definition as a logits processor: every vocabulary entry that already occurs in the
completion generated so far has `presence_penalty` subtracted from its logit, once, however
often it occurs (prompt tokens do not count). transformers runs custom processors after its
own penalties (repetition) and before temperature, top-k and top-p, which is vLLM's order too:
its sampler applies the repetition, frequency and presence penalties to the raw logits, then
temperature, then top-k / top-p.

The processor is attached only while the trainer generates rollouts (`presence_penalty_generate`),
so evaluation of the trained model in the same process decodes without it.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from ..core.errors import ConfigError

PRESENCE_RANGE = (-2.0, 2.0)  # vLLM SamplingParams and the OpenAI API accept [-2, 2]


def sampling_settings(train_cfg: Any) -> dict[str, float | int]:
    """The validated penalties: {top_k, repetition_penalty, presence_penalty}."""
    top_k = int(train_cfg.top_k)  # the composed train node (TrainSettings checked it)
    if top_k < 0:
        raise ConfigError(f"train.top_k={top_k}: give 0 (no top-k filtering) or a positive number of tokens")
    repetition = float(train_cfg.repetition_penalty)
    if repetition <= 0:
        raise ConfigError(f"train.repetition_penalty={repetition}: must be > 0 (1.0 = off)")
    presence = float(train_cfg.presence_penalty)
    low, high = PRESENCE_RANGE
    if not low <= presence <= high:
        raise ConfigError(f"train.presence_penalty={presence}: must be in [{low:g}, {high:g}] (0 = off), as in vLLM")
    return {"top_k": top_k, "repetition_penalty": repetition, "presence_penalty": presence}


def sampling_args(train_cfg: Any) -> dict[str, Any]:
    """GRPOConfig fields: top_k and repetition_penalty; vLLM rollouts also get the presence
    penalty natively through generation_kwargs (HF rollouts: the trainer's logits processor)."""
    s = sampling_settings(train_cfg)
    args: dict[str, Any] = {"top_k": s["top_k"], "repetition_penalty": s["repetition_penalty"]}
    if bool(train_cfg.use_vllm) and s["presence_penalty"]:
        args["generation_kwargs"] = {"presence_penalty": s["presence_penalty"]}
    return args


class PresencePenalty(LogitsProcessor):
    """Logits processor: scores[b, v] -= penalty for every token v in row b's generated part.

    One instance per generate call: the first call's input length is the prompt length (TRL
    left-pads the prompts of a batch to one length), so later calls see prompt + generated ids.
    """

    def __init__(self, penalty: float):
        self.penalty = float(penalty)
        self.prompt_length: int | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.prompt_length is None:
            self.prompt_length = input_ids.size(1)
        generated = input_ids[:, self.prompt_length:]
        if generated.size(1) == 0 or not self.penalty:
            return scores
        present = torch.zeros_like(scores, dtype=torch.bool)
        present.scatter_(1, generated.to(scores.device), True)
        return scores - self.penalty * present.to(scores.dtype)


@contextlib.contextmanager
def presence_penalty_generate(model: Any, penalty: float) -> Iterator[None]:
    """While inside, `model.generate(...)` also applies a fresh PresencePenalty per call.

    TRL calls `unwrapped_model.generate(**inputs, generation_config=...)` with no logits
    processors of its own, so the wrapper adds ours to that call; leaving restores the method.
    """
    if not penalty:
        yield
        return
    previous = vars(model).get("generate")  # an earlier instance-level wrapper, restored on exit
    original = model.generate

    def generate(*args, **kwargs):
        processors = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
        processors.append(PresencePenalty(penalty))
        return original(*args, logits_processor=processors, **kwargs)

    model.generate = generate  # an instance attribute shadows the class method for this model only
    try:
        yield
    finally:
        if previous is None:
            del model.generate
        else:
            model.generate = previous

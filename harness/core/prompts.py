"""The shared system prompt and chat formatting, pinned by version and hash.

One prompt serves training rollouts and evaluation, for raw and trained models alike
(docs/PROTOCOL.md §6). Reference answers never enter the prompt. Changing the text changes scores:
bump PROMPT_VERSION and note it in leaderboard/CHANGELOG.md.
"""
from __future__ import annotations

import hashlib
from typing import Any


PROMPT_VERSION = "1"

SYSTEM_PROMPT = (
    "Answer the user's question. First reason briefly inside <think> </think> tags, "
    "then give only the direct answer inside <answer> </answer> tags. "
    "If you do not know the answer, reply <answer>I don't know</answer>. "
    "Do not repeat yourself."
)

# The released CorVer code adds this line for trained models only; an option, off by default.
ANTI_LOOP_LINE = "Stop as soon as the answer is given; never repeat a sentence."


# A worked exchange placed before the question for models too small to follow the format from
# the instruction alone (model.demonstration: true; the embedded SmolLM2-135M). Off for the
# paper models. Same text in training and evaluation.
DEMONSTRATION = (
    {"role": "user", "content": "Who wrote the play Hamlet?"},
    {"role": "assistant",
     "content": "<think>Hamlet is a tragedy written by William Shakespeare.</think><answer>William Shakespeare</answer>"},
)


def system_prompt(anti_loop: bool, addition: str | None = None) -> str:
    """The shared system prompt, then the anti-loop line (an evaluation option), then a method's
    prompt addition (Method.prompt_addition), each after one space. Without either it is
    SYSTEM_PROMPT byte for byte, so every method without an addition keeps its prompt hash."""
    text = SYSTEM_PROMPT + (" " + ANTI_LOOP_LINE if anti_loop else "")
    return text + (" " + addition if addition else "")


def addition_of(cfg: Any) -> tuple[str | None, str]:
    """(Method.prompt_addition, method name) of the config's `method.name`, found through the
    method registry (a plugin is never imported by name here); (None, name) for a method without
    one, and for a config without a method."""
    method = cfg.get("method") if cfg is not None else None
    name = str(method.get("name")) if method is not None and method.get("name") is not None else ""
    if not name:
        return None, ""
    from .registry import get_method

    return getattr(get_method(name), "prompt_addition", None) or None, name


def method_prompt(addition: str | None, method: str) -> dict[str, Any] | None:
    """What a result records of a method's prompt addition (generation.method_prompt, the
    `prompt` component): None without one, so other methods' descriptors keep their bytes."""
    if not addition:
        return None
    return {"method": method, "position": "system, after the shared prompt", "hash": prompt_hash(addition),
            "chars": len(addition)}


def prompt_hash(text: str | None = None) -> str:
    return hashlib.sha256((text or SYSTEM_PROMPT).encode()).hexdigest()[:16]


def messages(question: str, *, system: str | None = None, system_role: bool,
             demonstration: bool) -> list[dict[str, str]]:
    """Chat messages for one question; models without a system role get it folded into the first user turn."""
    system = SYSTEM_PROMPT if system is None else system
    turns = [dict(t) for t in DEMONSTRATION] if demonstration else []
    turns.append({"role": "user", "content": question})
    if system_role:
        return [{"role": "system", "content": system}, *turns]
    turns[0]["content"] = f"{system}\n\n{turns[0]['content']}"
    return turns


def chat_messages(question: str, model_cfg: Any = None, *, system: str | None = None) -> list[dict[str, str]]:
    """`messages` with the model config's system-role and demonstration settings (ModelSettings: a key
    the node leaves out, or no node, takes configs/model/custom.yaml's value)."""
    from ..services.models.settings import ModelSettings

    settings = ModelSettings.of(model_cfg)
    return messages(question, system=system, system_role=settings.system_role, demonstration=settings.demonstration)


def response_prefix(model_cfg: Any = None) -> str:
    """Text the assistant turn starts with (model.response_prefix, e.g. "<think>"), or ""."""
    return str((model_cfg.get("response_prefix") if model_cfg is not None else None) or "")


def prompt_variant(model_cfg: Any = None) -> dict[str, Any]:
    """The model-specific parts of the prompt, recorded beside prompt_hash in results."""
    from ..services.models.settings import ModelSettings

    settings = ModelSettings.of(model_cfg)
    return {"system_role": settings.system_role, "demonstration": settings.demonstration,
            "response_prefix": response_prefix(model_cfg), "enable_thinking": settings.enable_thinking}


def format_prompt(tokenizer: Any, question: str, model_cfg: Any = None, *, system: str | None = None) -> str:
    """The generation prompt string for `question` under the model's chat template, ending with
    the model's response prefix. Tokenise it with add_special_tokens=False: the template
    already holds any BOS token."""
    kwargs: dict[str, Any] = {}
    thinking = model_cfg.get("enable_thinking") if model_cfg is not None else None
    if thinking is not None:
        kwargs["enable_thinking"] = bool(thinking)
    text = tokenizer.apply_chat_template(chat_messages(question, model_cfg, system=system),
                                         tokenize=False, add_generation_prompt=True, **kwargs)
    return text + response_prefix(model_cfg)

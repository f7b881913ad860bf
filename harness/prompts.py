"""The shared system prompt and chat formatting, pinned by version and hash.

One prompt serves training rollouts and evaluation, for raw and trained models alike
(PROTOCOL 6). Reference answers never enter the prompt. Changing the text changes scores:
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


def system_prompt(anti_loop: bool = False) -> str:
    return SYSTEM_PROMPT + (" " + ANTI_LOOP_LINE if anti_loop else "")


def prompt_hash(text: str | None = None) -> str:
    return hashlib.sha256((text or SYSTEM_PROMPT).encode()).hexdigest()[:16]


def messages(question: str, *, system: str | None = None, system_role: bool = True) -> list[dict[str, str]]:
    """Chat messages for one question; models without a system role get it folded into the user turn."""
    system = SYSTEM_PROMPT if system is None else system
    if system_role:
        return [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return [{"role": "user", "content": f"{system}\n\n{question}"}]


def format_prompt(tokenizer: Any, question: str, model_cfg: Any = None, *, system: str | None = None) -> str:
    """The generation prompt string for `question` under the model's chat template."""
    system_role = bool(model_cfg.get("system_role", True)) if model_cfg is not None else True
    kwargs: dict[str, Any] = {}
    thinking = model_cfg.get("enable_thinking") if model_cfg is not None else None
    if thinking is not None:
        kwargs["enable_thinking"] = bool(thinking)
    return tokenizer.apply_chat_template(
        messages(question, system=system, system_role=system_role),
        tokenize=False, add_generation_prompt=True, **kwargs,
    )

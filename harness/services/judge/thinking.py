"""Judge thinking: whether a reasoning judge (Qwen3 and the like) thinks before it answers.

The setting is a chat-template argument, sent as the request field

    chat_template_kwargs = {"enable_thinking": true | false}

which vLLM and SGLang pass to the model's chat template. Its value is the prompt's own
(`Decoding.enable_thinking`, what the prompt's original pinned: CorVer §A.2 runs its FActScore
claim extractor "with thinking disabled") or else the judge group's (`judge.enable_thinking`);
None sends nothing, the server's default. A server that refuses the field (a 400/422 naming it,
as OpenAI's API does) is asked again without it for the rest of the run, and the judge component
says so (`thinking.kwarg: refused`).

Whatever the server does, a reply that still carries a thinking block (`<think>...</think>`
before the answer, or only the closing tag when the chat template opened the block) is read
without it: `strip_thinking` removes the block before the prompt's parser sees the reply, and the
judge counts it (`thinking_stripped` in judge_stats.json).
"""
from __future__ import annotations

import re
from typing import Any

FIELD = "chat_template_kwargs"
SENT, REFUSED, NOT_SENT = "sent", "refused", "not sent"

# An optional opening tag, then everything up to the first closing tag, at the start of the reply.
_BLOCK = re.compile(r"\A\s*(?:<think>)?.*?</think>\s*", re.DOTALL)


def template_kwargs(enabled: bool | None) -> dict[str, Any]:
    """The request field for a thinking setting ({} for None: nothing sent)."""
    return {} if enabled is None else {FIELD: {"enable_thinking": bool(enabled)}}


def names_the_field(refusal: Exception) -> bool:
    """A refusal (transport.ServerRefused) that blames `chat_template_kwargs`."""
    return getattr(refusal, "status", None) in (400, 422) and FIELD in str(refusal)


def strip_thinking(text: str) -> tuple[str, bool]:
    """(the reply without a leading thinking block, whether there was one). A block that never
    closes is left in place: the reply has no answer, and the parser says so."""
    found = _BLOCK.match(text or "")
    if found is None:
        return text, False
    return text[found.end():], True


__all__ = ["FIELD", "NOT_SENT", "REFUSED", "SENT", "names_the_field", "strip_thinking", "template_kwargs"]

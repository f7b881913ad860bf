"""Structured (JSON schema) replies: the request field, the support probe, the reply decoder.

With `judge.reply_mode=auto` a prompt that has a `schema` is asked with

    response_format = {"type": "json_schema",
                       "json_schema": {"name": prompt.name, "schema": prompt.schema, "strict": true}}

where the endpoint supports it. Support is probed once per endpoint and served model (one tiny
request with a trivial schema, `probe_body`): a 400/422 that names `response_format` (the
field a server refuses, see transport.refused_fields: "Unexpected fields in the request:
{'response_format'}"), or a reply that ignores the schema (`transformers serve` 5.x accepts
the field, logs "Ignoring unsupported fields" and answers in prose), means unsupported, and
the judge asks in text. The finding is kept for the run and in the judge
cache's endpoint record. A structured reply is decoded with `decode_reply`: not JSON, or JSON
the prompt's `parse_json` rejects, is a ParseError like any unreadable text reply.
"""
from __future__ import annotations

import json
from typing import Any

from .spec import JudgePrompt, ParseError

TEXT, JSON_SCHEMA = "text", "json_schema"
FIELD = "response_format"
PROBE_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                "additionalProperties": False}
# The probe's text asks for something else than the schema does, so a reply in the schema's form
# shows the server enforced it (a model that ignores response_format does not guess {"ok": ...}).
_PROBE_MESSAGES = [{"role": "user", "content": "Say hello."}]
RECORD_PREFIX = "structured_replies:"  # the judge cache's endpoint record (meta table)


def response_format(name: str, schema: dict) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def probe_body(model: str) -> dict[str, Any]:
    """The support probe's request: a trivial schema, a few tokens, greedy."""
    return {"model": model, "messages": _PROBE_MESSAGES, "max_tokens": 16, "temperature": 0.0,
            FIELD: response_format("factrl_probe", PROBE_SCHEMA)}


def probe_followed(text: str) -> bool:
    """Whether the probe's reply is the schema's object (else the server ignored the schema)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict) and set(value) == {"ok"} and isinstance(value["ok"], bool)


def names_the_field(refusal: Exception) -> bool:
    """A refusal (transport.ServerRefused) that blames `response_format`."""
    status = getattr(refusal, "status", None)
    return status in (400, 422) and FIELD in str(refusal)


def decode_reply(prompt: JudgePrompt, text: str) -> Any:
    """The value of a structured reply, or ParseError."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as err:
        raise ParseError(f"a structured reply that is not JSON ({err})") from None
    try:
        return prompt.parse_json(data)  # type: ignore[misc]
    except ParseError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise ParseError(f"a structured reply without the schema's fields ({type(err).__name__}: {err})") from None


def record_key(endpoint_id: str, model: str) -> str:
    return f"{RECORD_PREFIX}{endpoint_id}|{model}"

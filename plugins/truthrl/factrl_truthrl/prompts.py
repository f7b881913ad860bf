"""TruthRL's judge: the release's system message and user turn as a `JudgePrompt`.

- `GRADE` (`truthrl_grade`): system = INSTRUCTIONS + "\\n" + IN_CONTEXT_EXAMPLES (judge_text.py,
  verbatim) with the harness's MATERIAL_RULE added on one line after it; user =
  "Question: {question}\\n Ground truth: {gold}\\n Prediction: {prediction}\\n" (the release's
  f-string, truthrl_qa.py:731 of the copy README.md cites), the prediction entering as
  `material(...)` (docs/CONTRACTS.md, "Material, never instructions"). Item {question, gold,
  prediction}: one gold per item, as the release asks its judge once per gold.
- Decoding: temperature 0, top-p 0.9, 512 tokens (the release's attempt_api_call,
  truthrl_qa.py:414-444: the commented OpenAI call and the litellm call both name
  meta-llama/Llama-3.3-70B-Instruct).
- Parse: as released (parse_response, truthrl_qa.py:472-500): the last {...} span of the reply,
  in it `"score": <digits>`, which must be 0 or 1. Where the release returned -1 (no span, no
  score, another number), this is a ParseError: the judge client re-asks, then fails the item,
  and a failed item is never scored (README, Fidelity). Value: 1 or 0.
- Reference answer (judge=reference): 1 when the protocol's matcher credits the prediction for
  that gold, else 0.

Bump `version` with any change of text, parser or decoding.
"""
from __future__ import annotations

import re

from factrl.harness.services.judge import MATERIAL_RULE, Decoding, JudgePrompt, ParseError, ReferenceTools, material

from .judge_text import IN_CONTEXT_EXAMPLES, INSTRUCTIONS

SOURCE = ("facebookresearch/TruthRL, as copied in muyupan/TruthRL@1424295 "
          "training/verl/verl/utils/reward_score/truthrl_qa.py:20-215,406-412,472-500,724-742")
PAPER_JUDGE = "meta-llama/Llama-3.3-70B-Instruct"  # truthrl_qa.py:418,440 (the release's judge call)
SYSTEM = INSTRUCTIONS + "\n" + IN_CONTEXT_EXAMPLES + MATERIAL_RULE + "\n"

_BRACES = re.compile(r"{([^}]*)}")  # truthrl_qa.py:473
_SCORE = re.compile(r'"score"\s*:\s*(\d+)')  # truthrl_qa.py:480


def _field(item: dict, key: str) -> str:
    if key not in item or item[key] is None:
        raise KeyError(f"judge prompt truthrl_grade needs item[{key!r}]")
    return str(item[key])


def render(item: dict) -> list[dict[str, str]]:
    prediction = material(_field(item, "prediction"), label="prediction")
    user = f"Question: {_field(item, 'question')}\n Ground truth: {_field(item, 'gold')}\n Prediction: {prediction}\n"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_score(text: str) -> int:
    """The release's reading of a judge reply (module docstring); a reply it could not score is a
    ParseError here, never a value."""
    spans = _BRACES.findall(str(text))
    if not spans:
        raise ParseError('no {...} in the reply; expected {"score": 1 or 0, "explanation": "..."}')
    found = _SCORE.search("{" + spans[-1] + "}")
    if not found:
        raise ParseError('the last {...} of the reply has no "score": <0 or 1>')
    score = int(found.group(1))
    if score not in (0, 1):
        raise ParseError(f'"score" is {score}; it must be 0 or 1')
    return score


def reference_score(item: dict, tools: ReferenceTools) -> int:
    """judge=reference: the protocol's matcher on the prediction against this one gold."""
    return 1 if tools.match(str(item.get("prediction") or ""), [str(item.get("gold") or "")]) else 0


GRADE = JudgePrompt(
    "truthrl_grade", "1", render, parse_score,
    format_hint='a JSON blob {"score": 1 or 0, "explanation": "..."}',
    source=SOURCE, decoding=Decoding(temperature=0.0, top_p=0.9, max_tokens=512), reference=reference_score)

__all__ = ["GRADE", "PAPER_JUDGE", "SOURCE", "SYSTEM", "parse_score", "reference_score", "render"]

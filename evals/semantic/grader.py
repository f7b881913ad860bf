"""SimpleQA's grader prompts (`eval.simpleqa_grader_options.template` x `parse`).

`template: simple-evals` (default): simple-evals' own grader, openai/simple-evals@ee3b031
simpleqa_eval.py:13-126 - the verbatim GRADER_TEMPLATE (grader_template.py) filled with the
question, the gold target and the predicted answer, after the system message "You are a
helpful assistant." (simple_evals.py:254-258, sampler/chat_completion_sampler.py:9, 59-62),
decoded at T 0.5 with 2,048 tokens (the sampler's default temperature, :25; max_tokens as
configured there). The predicted answer is what simple-evals grades: the WHOLE response
(`response_text`, simpleqa_eval.py:133-136), unless `graded_text: answer`.
- `parse: first_letter` ("simpleqa_grader" 1): as released (:125-126): the first capital A, B
  or C anywhere in the reply, default C. So "CORRECT" and "INCORRECT" read C, "NOT_ATTEMPTED"
  reads A, "Based on ..." reads B, and an unreadable reply is NOT_ATTEMPTED, never a failure
  (tests/reference_vectors/simple_evals/grade_parse.json).
- `parse: strict` ("simpleqa_grader_strict" 1): the same prompt, read by the harness's strict
  grade parser (a letter, a grade word, or the letter then its word, nothing else); anything
  else is re-asked, then a counted failure. Structured replies: {"grade": "A" | "B" | "C"}.
`template: short` (a named difference): the harness's shortened rubric (`SIMPLEQA_GRADE`,
harness/services/judge/prompts.py, shared with KnowRL's correctness term) with either parse
("simpleqa_grade_first_letter" 2, "simpleqa_grade_short_strict" 1), decoded with the judge
group's settings (the strict one capped at 8 tokens).

Model output (the graded text) enters every prompt only through `material()`. The released
template keeps its words; the material rule is added as one paragraph before its "Here is a
new example." (a documented difference, evals/semantic/README.md).
Reference answer (the `reference` judge): the protocol's matcher on the extracted final answer:
NOT_ATTEMPTED for an empty or refused answer, CORRECT when it matches a gold answer, else
INCORRECT.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.services.judge import MATERIAL_RULE, SIMPLEQA_GRADE, Decoding, JudgePrompt, ParseError, material
from factrl.harness.services.judge.prompts import GRADES, parse_grade

from .grader_template import GRADER_TEMPLATE
from .prompts import NO_ANSWER, parse_first_letter

SYSTEM = "You are a helpful assistant."  # OPENAI_SYSTEM_MESSAGE_API, simple_evals.py:9
SOURCE = "openai/simple-evals@ee3b031 simpleqa_eval.py:13-126, simple_evals.py:254-258"
RELEASED_DECODING = Decoding(temperature=0.5, max_tokens=2048)
_NEW_EXAMPLE = "Here is a new example."
LABEL = "predicted answer"


def _target(item: dict) -> str:
    gold = item.get("gold")
    golds = [str(g).strip() for g in ([gold] if isinstance(gold, str) else (gold or [])) if str(g).strip()]
    if not golds:
        raise KeyError("the SimpleQA grader needs a non-empty item['gold']")
    return golds[0]  # simple-evals grades against the row's one "answer"


def render_released(item: dict) -> list[dict[str, str]]:
    text = GRADER_TEMPLATE.format(question=str(item["question"]), target=_target(item),
                                  predicted_answer=material(str(item.get("response") or ""), label=LABEL))
    text = text.replace(_NEW_EXAMPLE, MATERIAL_RULE + "\n\n" + _NEW_EXAMPLE, 1)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def render_short(item: dict) -> list[dict[str, str]]:
    graded = str(item.get("response") or "").strip()
    messages = SIMPLEQA_GRADE.render({"question": item["question"], "gold": item["gold"],
                                      "answer": material(graded, label="answer") if graded else NO_ANSWER})
    return [{"role": m["role"], "content": MATERIAL_RULE + "\n\n" + m["content"]} for m in messages]


def reference_grade(item: dict, tools: Any) -> str:
    answer = str(item.get("answer") or "").strip()
    if not answer or tools.refusal(answer):
        return "NOT_ATTEMPTED"
    gold = item.get("gold")
    golds = [gold] if isinstance(gold, str) else list(gold or [])
    return "CORRECT" if tools.match(answer, golds) else "INCORRECT"


def _grade_json(obj: Any) -> str:
    letter = obj.get("grade") if isinstance(obj, dict) else None
    if letter not in GRADES:
        raise ParseError('expected {"grade": "A" | "B" | "C"}')
    return GRADES[letter]


_SCHEMA = {"type": "object", "properties": {"grade": {"type": "string", "enum": ["A", "B", "C"]}},
           "required": ["grade"], "additionalProperties": False}
_HINT = 'the single letter "A", "B" or "C".'

SIMPLEQA_GRADER = JudgePrompt("simpleqa_grader", "1", render_released, parse_first_letter, format_hint=_HINT,
                              source=SOURCE, decoding=RELEASED_DECODING, reference=reference_grade)
SIMPLEQA_GRADER_STRICT = JudgePrompt("simpleqa_grader_strict", "1", render_released, parse_grade, format_hint=_HINT,
                                     source=SOURCE + " (strict parse: harness design)", decoding=RELEASED_DECODING,
                                     schema=_SCHEMA, parse_json=_grade_json, reference=reference_grade)
SIMPLEQA_SHORT_FIRST_LETTER = JudgePrompt("simpleqa_grade_first_letter", "2", render_short, parse_first_letter,
                                          format_hint=SIMPLEQA_GRADE.format_hint,
                                          source="harness design (short rubric), parsed as simpleqa_eval.py:125-126",
                                          reference=reference_grade)
SIMPLEQA_SHORT_STRICT = JudgePrompt("simpleqa_grade_short_strict", "1", render_short, parse_grade,
                                    format_hint=SIMPLEQA_GRADE.format_hint, source="harness design (short rubric)",
                                    decoding=Decoding(max_tokens=8), schema=_SCHEMA, parse_json=_grade_json,
                                    reference=reference_grade)

GRADER_PROMPTS = {("simple-evals", "first_letter"): SIMPLEQA_GRADER, ("simple-evals", "strict"): SIMPLEQA_GRADER_STRICT,
                  ("short", "first_letter"): SIMPLEQA_SHORT_FIRST_LETTER, ("short", "strict"): SIMPLEQA_SHORT_STRICT}


def grader_prompt(template: str, parse: str) -> JudgePrompt:
    return GRADER_PROMPTS[(template, parse)]

"""KnowRL's deliberate differences from its release (zjunlp/KnowRL@f75b0bb), for the run's
components: `settings.differences` lists each as {"setting", "original", "ours"}, so a table can
mark it. The README's "Fidelity" table explains every row; tests/knowrl/test_fidelity.py runs the
reward on the reference vectors (outputs of the released code) to pin what is the same.
"""
from __future__ import annotations

from typing import Any

from .scoring import KnowRLSettings

RELEASE = "zjunlp/KnowRL@f75b0bb"

# Differences every KnowRL run has (the failure rule, the contract's material rule, protocol choices).
ALWAYS = (
    {"setting": "judge_failure",
     "original": "an API error or a reply without a grade scores 0.0 (train/reward_function/correct_reward.py:94-112)",
     "ours": "no signal (the reward failure rule): re-asked up to judge.max_reasks, then None, counted"},
    {"setting": "judge_question",
     "original": "the chat-templated prompt: the `qwestion` column never reaches the reward (main.py:85-97; "
                 "correct_reward.py:162)",
     "ours": "the row's question"},
    {"setting": "judge_material",
     "original": "the answer and the text pasted into LLM_EVAL_PROMPT / ATOMIC_FACT_PROMPT as they are",
     "ours": "delimited as material (docs/CONTRACTS.md), one material-rule line added to each prompt"},
    {"setting": "retrieval",
     "original": "GTR-t5-large dense ranking, top 5 per (topic, fact) (FActScore/factscore/factscorer.py:536,796)",
     "ours": "BM25 over the row's title articles, top evidence.k for 'title fact'"},
    {"setting": "scorer_failure",
     "original": "any FactScorer exception, a missing title or a batch of one zeroes every fact term of the batch "
                 "(fact_reward.py:66-80,131,193-201)",
     "ours": "per completion: a row without evidence has fact 0; a failed fact split is no signal"},
    {"setting": "system_prompt",
     "original": "KnowRL's system prompt, user turn left open (main.py:74-90, continue_final_message=True)",
     "ours": "the protocol's shared prompt and chat template (harness/core/prompts.py)"},
)


def differences(settings: KnowRLSettings, nli: dict[str, Any]) -> list[dict[str, str]]:
    """The differences of a run with these settings and this NLI scorer (its describe())."""
    out = [dict(d) for d in ALWAYS]
    if settings.grade_parse == "strict":
        out.append({"setting": "grade_parse",
                    "original": "first of CORRECT|A, INCORRECT|B, NOT_ATTEMPTED|C as a word anywhere in the reply "
                                "(correct_reward.py:68-106): a stray article 'A' grades CORRECT",
                    "ours": "strict: only a reply that is a grade; any other is re-asked, then no signal"})
    if settings.answer_guard == "strict":
        out.append({"setting": "answer_guard",
                    "original": "every answer goes to the judge (the reference judge's containment pays a negated, "
                                "retracted or listed gold, and the first of several answer blocks)",
                    "ours": "strict (a guard): strict accuracy's gaming verdicts (multiple_blocks, negated, retracted, "
                            "candidates, embedded, fragment) are incorrect without a judge call"})
    if settings.grade_check == "matcher":
        out.append({"setting": "grade_check", "original": "the judge's grade is the grade",
                    "ours": "matcher (a guard): the judge's CORRECT stands only where the protocol's matcher credits "
                            "the answer too; else INCORRECT"})
    if settings.variant != "head":
        out.append({"setting": "variant", "original": f"{RELEASE} (HEAD), the reward CorVer describes",
                    "ours": f"{settings.variant} (the paper-era tag's reward)"})
    if nli.get("backend") == "deberta" and str(nli.get("dtype", "")).lower() not in ("float16", "fp16", "half"):
        out.append({"setting": "nli.precision",
                    "original": "fp16 (model.half()) on GPUs of capability >= 7 (factscorer.py:208-217)",
                    "ours": f"{nli.get('dtype')} on {nli.get('device')}"})
    return out


__all__ = ["ALWAYS", "RELEASE", "differences"]

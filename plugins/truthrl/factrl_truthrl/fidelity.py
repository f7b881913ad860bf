"""TruthRL's deliberate differences from its release, for the run's components
(`settings.differences`: {"setting", "original", "ours"} each). README.md's "Fidelity" table
explains them; tests/test_truthrl_reference_vectors.py pins what is the same.

The release is facebookresearch/TruthRL; its snapshot is not reachable from this project's
machines, so every file:line is of the whole-repository copy muyupan/TruthRL@1424295 (RELEASE).
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.answers import STRICT_VERSION

RELEASE = "facebookresearch/TruthRL via muyupan/TruthRL@1424295"
QA = "training/verl/verl/utils/reward_score/truthrl_qa.py"

ALWAYS = (
    {"setting": "answer_span", "original": f"the first \\boxed{{...}} of the response ({QA}:294-307), asked for by the "
                                           f"release's prompt (evaluation/prompts.py:8, BOX_FORMAT)",
     "ours": "the protocol's answer: the last closed <answer> block (harness.core.answers.extract_answer), the prompt "
             "shared by every method"},
    {"setting": "policy_prompt", "original": "CRAG's prompt with 'I don't know' / 'invalid question' guidelines "
                                             "(evaluation/prompts.py:11-16)",
     "ours": "the harness prompt shared by every method (its <answer>I don't know</answer> instruction)"},
    {"setting": "judge_failure", "original": f"a failed or unreadable judge call counts as not accepted: -1 "
                                             f"({QA}:436-500,733-742)",
     "ours": "no signal (judge_failed) unless another gold was accepted; failed items are never scored or cached"},
    {"setting": "judge_batching", "original": f"one call per gold, in order, until one is accepted ({QA}:724-742)",
     "ours": "every (completion, gold) pair of a step in one ask_many; any accepted gold -> correct"},
    {"setting": "judge_material", "original": f"the prediction pasted into the user turn ({QA}:731)",
     "ours": "the prediction as a material block, MATERIAL_RULE after the released system text"},
)


def differences(settings: Any) -> list[dict[str, str]]:
    """The differences of a run with these settings."""
    out = [dict(d) for d in ALWAYS]
    if settings.verifier != "judge":
        out.append({"setting": "verifier", "original": f"LLM judge (Llama-3.3-70B-Instruct, {QA}:418,440) for "
                                                       f"answers that are not an exact match",
                    "ours": "exact match only (the release's compute_score_llm_as_a_judge_ternary_EM)"
                    if settings.verifier == "exact" else "the protocol's matcher (harness.core.answers.match_closed_book)"})
    if settings.abstention != "released":
        out.append({"setting": "abstention", "original": f"'i dont know' contained in the normalised answer ({QA}:699)",
                    "ours": "the answer is exactly an abstention form (harness.core.answers.is_refusal), a guard"})
    if settings.answer_guard != "none":
        out.append({"setting": "answer_guard", "original": "the answer is judged as given",
                    "ours": f"strict accuracy v{STRICT_VERSION}'s gaming verdicts are wrong without a judge call "
                            f"(a guard)"})
    if (settings.correct, settings.abstain, settings.wrong) != (1.0, 0.0, -1.0):
        out.append({"setting": "reward_values", "original": f"+1 / 0 / -1 ({QA}:699-749)",
                    "ours": f"{settings.correct} / {settings.abstain} / {settings.wrong}"})
    return out


__all__ = ["ALWAYS", "QA", "RELEASE", "differences"]

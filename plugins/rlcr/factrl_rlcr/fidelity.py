"""RLCR's deliberate differences from its release (damanimehul/RLCR@8904bed), for the run's
components (`settings.differences`). README.md's "Fidelity" table explains them;
tests/test_rlcr_reference_vectors.py pins what is the same.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.answers import STRICT_VERSION

RELEASE = "damanimehul/RLCR@8904bed"

ALWAYS = (
    {"setting": "policy_prompt", "original": "TABC_LONG_PROMPT, which asks for <analysis> and a <confidence> in [0, 1] "
                                             "(system_prompts.py:16-29; RLCR.yaml:50 sys_prompt_name tabc_long)",
     "ours": "the shared harness prompt (think and answer blocks) plus RLCR's prompt addition (prompt.py): "
             "system_prompts.py:19-20's confidence and analysis sentences and :29's format, verbatim; without the "
             "release's framing (:17-18), its request to reason inside the analysis tags and its seven analysis "
             "guidelines (:20-28), which would not fit the embedded model's 256-token prompt budget"},
    {"setting": "golds", "original": "one gold per row (the hotpot dataset's answer, reward_fns.py:69,81)",
     "ours": "every gold of the row (exact match against any)"},
    {"setting": "confidence_nan", "original": "float('nan') passes the [0, 1] check (reward_fns.py:55-56) and makes "
                                              "the Brier term and the reward NaN",
     "ours": "a confidence must be a finite number in [0, 1]"},
)


def differences(settings: Any) -> list[dict[str, str]]:
    out = [dict(d) for d in ALWAYS]
    if settings.missing_confidence == "no_signal":
        out.append({"setting": "missing_confidence", "original": "a missing or unreadable confidence fails the format: "
                                                                 "format, accuracy and Brier terms 0 (reward_fns.py:44-63,"
                                                                 "95-111), the 1e-6 terms as computed",
                    "ours": "no signal (no_confidence / bad_confidence): never a value"})
    if settings.correctness != "exact":
        out.append({"setting": "correctness", "original": "normalised exact match for hotpot (reward_fns.py:24-25,80-81)",
                    "ours": settings.correctness + (f" (a guard: strict accuracy v{STRICT_VERSION})" if settings.correctness == "strict"
                                                    else " (the protocol's matcher)")})
    if settings.format_pattern != "tabc":
        out.append({"setting": "format_pattern", "original": "tabc (RLCR.yaml:20)", "ours": settings.format_pattern})
    weights = (settings.w_format, settings.w_accuracy, settings.w_brier, settings.w_mean_confidence,
               settings.w_confidence_extreme)
    if weights != (0.5, 0.5, 0.5, 1e-6, 1e-6):
        out.append({"setting": "weights", "original": "0.5, 0.5, 0.5, 1e-6, 1e-6 (RLCR.yaml:43-44)",
                    "ours": ", ".join(f"{w:g}" for w in weights)})
    return out


__all__ = ["ALWAYS", "RELEASE", "differences"]

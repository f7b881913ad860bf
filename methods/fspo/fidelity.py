"""FSPO's deliberate differences from the released code (nusnlp/FSPO @7f5e4f9), for the run's
components: `settings.differences` lists each one as {"setting", "original", "ours"}, so a table
can mark it. The README's "Fidelity" table explains them; the reference-vector tests
(tests/fspo/test_reference_vectors.py) pin what is the same.
"""
from __future__ import annotations

from typing import Any

from .settings import FSPOSettings

RELEASE = "nusnlp/FSPO@7f5e4f9"

# Differences every FSPO run has (shared protocol choices, or a released defect not copied).
ALWAYS = (
    {"setting": "answer_score", "original": "HotpotQA token F1 of the last <answer> block (hotpot.py:274)",
     "ours": "0/1 from the harness answer matcher (the rule that evaluates every method)"},
    {"setting": "evidence", "original": "the row's whole HotpotQA `knowledge` (fsdp_workers.py:1077)",
     "ours": "top-k BM25 passages of the row's `title` articles (evidence store)"},
    {"setting": "splitter", "original": "nltk.sent_tokenize of the last think block (fsdp_workers.py:1031)",
     "ours": "the docs/PROTOCOL.md §1 sentence splitter"},
    {"setting": "mask_layout", "original": "each sentence's +1/-1 repeated per token and written from response "
                                          "position 0, not at the sentence (fsdp_workers.py:1091-1092)",
     "ours": "+1/-1 on each sentence's own tokens (offset alignment), +1 elsewhere"},
)


def differences(settings: FSPOSettings, nli: dict[str, Any]) -> list[dict[str, str]]:
    """The differences of a run with these settings and this NLI scorer (its describe())."""
    out = [dict(d) for d in ALWAYS]
    if settings.format_penalty != 0.0:
        out.append({"setting": "format_penalty", "original": "0: the reward is the answer score (fsdp_workers.py:1101)",
                    "ours": f"{settings.format_penalty:g} for a format failure"})
    if settings.variant != "sign_flip":
        out.append({"setting": "variant", "original": "sign flip of the token advantages (ray_trainer.py:148-152)",
                    "ours": f"{settings.variant} (the paper's Eq. 10 step reward, no flip)"})
    if settings.threshold != 0.5:
        out.append({"setting": "threshold", "original": "HHEM score > 0.5 (fsdp_workers.py:1032)",
                    "ours": f"> {settings.threshold:g}"})
    if nli.get("backend") == "hhem" and nli.get("autocast") != "bfloat16":
        out.append({"setting": "nli.precision", "original": "bf16 weights under torch.autocast(cuda, bf16) "
                                                            "(fsdp_workers.py:931,938,1028)",
                    "ours": f"{nli.get('dtype')} on {nli.get('device')}, autocast {nli.get('autocast')}"})
    return out


__all__ = ["ALWAYS", "RELEASE", "differences"]

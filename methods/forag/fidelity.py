"""FoRAG's deliberate differences, for the run's components (`settings.differences`, docs/CONTRACTS.md
"Provenance of reward components"). FoRAG released no training or reward code, so "original" is
what the FoRAG paper (Cai et al., KDD 2024, arXiv 2406.13779; its abstract) or the CorVer paper's
re-implementation (arXiv 2605.29648, A.1.1, D.3.3, D.5) states; everything the papers leave open
is this harness's design, and the README's "Fidelity" table lists every such choice with its source.
"""
from __future__ import annotations

from typing import Any

from .settings import FoRAGSettings

PAPER = "FoRAG (arXiv 2406.13779), abstract"
CORVER = "CorVer (arXiv 2605.29648)"

# Differences every FoRAG run has: the shared protocol's choices against what the papers state.
ALWAYS = (
    {"setting": "generator", "original": f"an outline-enhanced generator trained by SFT ({PAPER})",
     "ours": "the shared prompt and policy of every method, no outline stage, no SFT"},
    {"setting": "reward_model", "original": f"'automatic evaluation and reward modeling in different levels of "
                                            f"granularity' ({PAPER}); CorVer: sub-claims 'verified against "
                                            f"evidence', scored locally ({CORVER} A.1.1, D.5)",
     "ours": "an online judge splits each sentence into sub-claims and verifies each one against the row's "
             "top-k BM25 passages; no learned reward model"},
    {"setting": "evidence", "original": f"retrieved web evidence ({PAPER}); 'the row's evidence' ({CORVER} A.1.1)",
     "ours": "top-k BM25 passages of the row's `title` articles in the evidence store"},
)


def differences(settings: FoRAGSettings) -> list[dict[str, Any]]:
    """The differences of a run with these settings: ALWAYS, and each guard that is on (a guard
    changes the harness's design as it stands, README "Guards")."""
    out = [dict(d) for d in ALWAYS]
    if settings.dedupe_statements:
        out.append({"setting": "dedupe_statements", "original": "off (the design as it stands)",
                    "ours": "on: a sub-claim repeated within a completion earns no positive value"})
    if settings.max_rewarded_statements is not None:
        out.append({"setting": "max_rewarded_statements", "original": "off (the design as it stands)",
                    "ours": f"{settings.max_rewarded_statements}: only a completion's first "
                            f"{settings.max_rewarded_statements} sub-claims earn positive value"})
    if settings.positive_cap != "none":
        out.append({"setting": "positive_cap", "original": "none (no correctness term: any supported sub-claim pays)",
                    "ours": "answer: with an answer strict accuracy does not credit, a sub-claim stating it is "
                            "unsupported and no other earns positive value"})
    return out


__all__ = ["ALWAYS", "CORVER", "PAPER", "differences"]

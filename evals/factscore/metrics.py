"""FActScore-NPM quantities of a sample of responses (docs/PROTOCOL.md §6), from per-response records.

Per response r of the sample: F_r scored facts, S_r supported ones (score > 0.3). Over all N
sampled responses (the CorVer paper, §A.2: N = 1,000, "empty reasoning and fact-free responses
remain in N"; a response whose claim extraction failed stays in N too, with F_r = 0, and is
counted as `extraction_failed`): F = sum F_r, S = sum S_r, A = the responses with at least one
scored fact (covered). FActScore's own score leaves fact-free responses out (factscorer.py
:199-206); that number is `factscore_macro_precision`.

- `factscore_precision` = S / F, the micro precision docs/PROTOCOL.md §6 reports (n = F; stderr over facts);
- `factscore_supported_per_response` = S / N; `factscore_facts_per_response` = F / N;
- `factscore_coverage` = A / N;
- `factscore_macro_precision` = the mean over covered responses of S_r / F_r: FActScore's own
  score, a different number (docs/BASELINES.md §7), kept under its own name;
- `factscore_facts`, `factscore_supported`, `factscore_covered`, `factscore_responses`: F, S, A, N
  (the paper's table; value = the count, stderr null).
Claims without a scorable token are skipped (not in F) and counted beside the metrics.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..metrics import mean_stderr


def _entry(values: Sequence[float], higher_is_better: bool = True) -> dict[str, Any]:
    value, stderr = mean_stderr(list(values))
    return {"value": value, "n": len(values), "stderr": stderr, "higher_is_better": higher_is_better}


def _count(value: int, n: int) -> dict[str, Any]:
    return {"value": value, "n": n, "stderr": None, "higher_is_better": True}


def factscore_metrics(responses: Sequence[dict[str, Any]]) -> tuple[dict[str, dict], dict[str, int]]:
    """(metrics entries, counts) from records with `facts` (list of {"supported"}) and `failed`."""
    kept = list(responses)
    per_fact = [float(bool(f["supported"])) for r in kept for f in r["facts"]]
    facts = [len(r["facts"]) for r in kept]
    supported = [sum(bool(f["supported"]) for f in r["facts"]) for r in kept]
    covered = [s / f for s, f in zip(supported, facts) if f]
    n, big_f, big_s, big_a = len(kept), sum(facts), sum(supported), sum(1 for f in facts if f)
    metrics = {
        "factscore_precision": _entry(per_fact),
        "factscore_supported_per_response": _entry([float(s) for s in supported]),
        "factscore_coverage": _entry([float(f > 0) for f in facts]),
        "factscore_facts_per_response": _entry([float(f) for f in facts]),
        "factscore_macro_precision": _entry(covered),
        "factscore_facts": _count(big_f, n), "factscore_supported": _count(big_s, n),
        "factscore_covered": _count(big_a, n), "factscore_responses": _count(n, n),
    }
    counts = {"responses": n, "facts": big_f, "supported": big_s, "covered": big_a,
              "empty_reasoning": sum(1 for r in kept if r.get("empty")),
              "extraction_failed": sum(1 for r in kept if r.get("failed")),
              "claims_skipped": sum(int(r.get("skipped", 0)) for r in kept),
              "claims_no_article": sum(int(r.get("no_article", 0)) for r in kept)}
    return metrics, counts

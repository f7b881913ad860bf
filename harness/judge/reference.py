"""`judge=reference`: each item answered in-process by its prompt's `reference(item, tools)`.

No server, no tokens, no event loop: a batch is a loop over its items, so a judge-based step
costs what its reward's own bookkeeping costs. The answers are deterministic stand-ins built
from the protocol's own rules (`ReferenceTools`: the answer matcher, the sentence splitter,
heuristic claims, the lexical NLI stand-in, the run's evidence store); the component says so
(`stand_in: true`). A prompt without a `reference` fails its items ("no reference answer for
prompt NAME"), counted like any judge failure. docs/CONTRACTS.md, "Reference answers".
"""
from __future__ import annotations

from typing import Any

from .spec import ReferenceTools


def _sentences(text: str) -> list[str]:
    from factrl.harness.completions import split_sentences

    body = str(text or "")
    return [body[a:b] for a, b in split_sentences(body)]


def reference_tools(evidence: Any = None) -> ReferenceTools:
    """The standard tools: the protocol's matcher and refusal forms (factrl.evals.answers), the
    reference sentence splitter, heuristic claims (factrl.harness.claims), the lexical NLI
    stand-in (factrl.harness.nli.standin) and `evidence` (the run's store, or None)."""
    from factrl.evals.answers import is_refusal, match_closed_book
    from factrl.harness.claims import claims
    from factrl.harness.nli.standin import lexical_support

    return ReferenceTools(match=lambda answer, golds: match_closed_book(str(answer), [str(g) for g in golds]),
                          refusal=is_refusal, split_sentences=_sentences, claims=claims, nli=lexical_support,
                          evidence=evidence)


def tools_versions() -> dict[str, str]:
    """Versions of the rules the tools apply (recorded in the reference judge's component)."""
    from factrl.evals import SCORER_VERSION
    from factrl.harness.claims import CLAIMS_VERSION
    from factrl.harness.nli.standin import STANDIN_VERSION

    return {"scorer": str(SCORER_VERSION), "claims": CLAIMS_VERSION, "nli_standin": STANDIN_VERSION}

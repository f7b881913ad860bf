"""Binary RAR's deliberate differences from its release (chentong0/rl-binary-rar@d97ea69, the
Tinker implementation binary_rar_tinker/), for the run's components (`settings.differences`).
README.md's "Fidelity" table explains them; tests/test_binary_rar_reference_vectors.py pins what is the same.
"""
from __future__ import annotations

from typing import Any

RELEASE = "chentong0/rl-binary-rar@d97ea69"

ALWAYS = (
    {"setting": "documents", "original": "the prompt's cached documents (the dataset's ground_truth docs, at most 10), "
                                         "cut into 512-token chunks of the verifier's tokenizer (train.py:100-147)",
     "ours": "the row's title articles in the harness's evidence store, passages of evidence.passage_tokens"},
    {"setting": "retrieval", "original": "rank_bm25 BM25Okapi over lower-cased whitespace words, the response as the "
                                         "query, top 8 (train.py:146-162,356)",
     "ours": "the store's SQLite FTS5 BM25 over the row's articles (EvidenceStore.for_row), filled to top_k in "
             "document order"},
    {"setting": "verifier_failure", "original": "an unreadable reply scores 0.0; a SCORE of another number scores that "
                                                "number (train.py:217-264)",
     "ours": "a reply must hold SCORE 0 or 1, else it is re-asked and then no signal (judge_failed), never scored"},
    {"setting": "verifier_material", "original": "the response pasted into the prompt (prompts.py:50-51)",
     "ours": "the response as a material block, MATERIAL_RULE on the line before it"},
    {"setting": "policy_prompt", "original": "the WildChat user turn, any task (binary-rar-wildchat-8k)",
     "ours": "the harness prompt shared by every method, closed-book questions"},
    {"setting": "parse_failure", "original": "a response the renderer cannot parse (no stop) earns 0 (train.py:342-351)",
     "ours": "every completion is verified as it stands"},
)


def differences(settings: Any) -> list[dict[str, str]]:
    out = [dict(d) for d in ALWAYS]
    if settings.top_k != 8:
        out.append({"setting": "top_k", "original": "8 (README.md, configs/verifier_*.json bm25_top_k)",
                    "ours": str(settings.top_k)})
    if (settings.supported, settings.contradicted) != (1.0, 0.0):
        out.append({"setting": "reward_values", "original": "1 / 0", "ours": f"{settings.supported} / {settings.contradicted}"})
    return out


__all__ = ["ALWAYS", "RELEASE", "differences"]

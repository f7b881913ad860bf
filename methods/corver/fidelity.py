"""CorVer's deliberate differences from the released code (shichengf/CorVer @f3cadc2), for the
run's components: `settings.differences` lists each as {"setting", "original", "ours"}, so a table
can mark it. The README's "Fidelity" table explains them; tests/corver/test_reference_vectors.py
pins the extractor prompt and parser, which are the same.
"""
from __future__ import annotations

from typing import Any

RELEASE = "shichengf/CorVer@f3cadc2"
RELEASED_ALPHAS = (-0.3, -0.1, 0.0, 0.1)  # train/sentence_reward.py:39-45

ALWAYS = (
    {"setting": "extractor.batching", "original": "left-padded batches of 32 (entity_extractor.py:202-240)",
     "ours": "length-sorted batches of extractor.batch_size with a private seeded RNG"},
    {"setting": "triple_choice", "original": "the first 3-item non-pronoun triple; no query -> no count "
                                             "(train/sentence_reward.py:317-337)",
     "ours": "the first valid triple that gives a query"},
    {"setting": "pronouns", "original": "46 words (train/sentence_reward.py:64-72)",
     "ours": "factrl.harness.services.corpus.PRONOUNS (16 more)"},
    {"setting": "query_terms", "original": "words split on spaces and commas (train/sentence_reward.py:92-141)",
     "ours": "the same, with punctuation trimmed from word ends"},
    {"setting": "correctness", "original": "two-way substring match against the batch's first gold "
                                           "(train/string_match_judge.py:37-68)",
     "ours": "the evaluator's matcher against each completion's own gold"},
    {"setting": "format", "original": "regex with a 30-character think, lenient closing tags "
                                      "(train/reward_function/format_reward.py:8-40)",
     "ours": "the paper's R^f"},
    {"setting": "advantage_layout",
     "original": "compute_loss left-packs the tokens but left-pads the (B, T) advantages, so a row whose prompt has "
                 "p pad tokens trains token j with the advantage of token j - p "
                 "(train/stepwise_grpo_trainer.py:269,291,306-313)",
     "ours": "each token its own advantage (vector corver/compute_loss_layout.json)"},
)


def differences(settings: Any, corpus: Any) -> list[dict[str, str]]:
    """The differences of a run with these reward settings and corpus-reward settings."""
    out = [dict(d) for d in ALWAYS]
    if tuple(float(a) for a in corpus.alphas) != RELEASED_ALPHAS:
        out.append({"setting": "alphas", "original": "-0.3 / -0.1 / 0 / +0.1 (train/sentence_reward.py:39-45)",
                    "ours": " / ".join(f"{a:g}" for a in corpus.alphas) + " (paper v2)"})
    if str(corpus.aggregation).lower() != "first":
        out.append({"setting": "aggregation", "original": "first valid triple (train/sentence_reward.py:317-337)",
                    "ours": str(corpus.aggregation)})
    return out


__all__ = ["ALWAYS", "RELEASE", "RELEASED_ALPHAS", "differences"]

"""The scorer's version changes whenever its behaviour does.

A fingerprint of normalisation, stopwords, refusal list, extraction and matching on fixed
probes is pinned to SCORER_VERSION. If you change any of them this test fails: bump
SCORER_VERSION in evals/scorers/default.py, add a changelog line to evals/README.md, and record the
new fingerprint here.
"""
from __future__ import annotations

import hashlib
import json

from factrl.evals import SCORER_VERSION
from factrl.harness.core.answers import REFUSALS, STOPWORDS, extract_answer, match_closed_book, normalize_answer

# 1.0 (lower-case) was pinned before the case-folding probes were added: 258f2b2a...
FINGERPRINTS = {"1.1": "07fb3acd598e62b71321c790d6bcd918eadd6ae01f160365dd677fb116553223"}

PROBES = ["The Beatles", "Müller", "Jane's", "don't", "1.5", "AC/DC", "½", "🇩🇰", "İstanbul", "I don’t know.",
          "an apple", "snake_case", "ℌ", "Sigurðardóttir", "Theißen", "Almatı", "Łódź"]
COMPLETIONS = ["<think>r</think><answer>Paris</answer>", "<answer>A</answer><answer>B",
               "<answer>A <answer>B</answer></answer>", "<ANSWER>x</Answer>", "no tags", "</think><answer>y"]
MATCHES = [("1", ["1945"]), ("1945", ["May 1945"]), ("in", ["Born in Paris"]), ("US", ["US"]),
           ("Jane", ["Jane's Addiction"])]


def fingerprint() -> str:
    blob = json.dumps([[normalize_answer(p) for p in PROBES], sorted(STOPWORDS), sorted(REFUSALS),
                       [list(extract_answer(c)) for c in COMPLETIONS], [match_closed_book(a, r) for a, r in MATCHES]])
    return hashlib.sha256(blob.encode()).hexdigest()


def test_behaviour_matches_the_pinned_version():
    assert SCORER_VERSION in FINGERPRINTS, f"record the fingerprint of version {SCORER_VERSION}: {fingerprint()}"
    assert fingerprint() == FINGERPRINTS[SCORER_VERSION], (
        f"scoring behaviour changed without a version bump: bump SCORER_VERSION (now {SCORER_VERSION}), note it in "
        f"evals/README.md's changelog and pin the new fingerprint {fingerprint()}")


def test_version_is_written_into_metrics(tmp_path):
    from factrl.evals.loaders import Record
    from factrl.evals.metrics import aggregate, metrics_file
    from factrl.evals.scorers import get_scorer
    from factrl.evals.sets import EvalSet

    eval_set = EvalSet("v", "closed_book", [Record("0", "q", ("a1",))], "test", None, "1")
    scorer = get_scorer("default")
    generation = {k: None for k in ("backend", "model", "adapter", "prompt_version", "prompt_hash", "decoding", "limit")}
    doc = metrics_file(set_info=eval_set.describe(), scorer=scorer.describe(), generation=generation,
                       metrics=aggregate(scorer.score(eval_set, ["<answer>a1</answer>"]), scorer.metrics("closed_book")))
    assert doc["scorer"] == {"name": "default", "version": SCORER_VERSION, "options": {"truthfulqa_no_comment": False, "truthfulqa_content_guard": True}}

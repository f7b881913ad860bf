"""The CorVer tests' corpus and its real infini-gram index (also used by the probe tests and
`benchmarks/gpu_step.py`).

The index is built by the corpus service's own builder (factrl.harness.services.corpus.build_index)
from a corpus this file writes, with the tiny-llama (Llama-2) tokenizer, and counted by the
real engine with the paper's parameters. Fact documents are separated by filler documents
longer than max_diff_tokens, so the engine's window never reaches a neighbouring fact
document and every count below is exact and hand-checkable:

    Paris AND France           25   (>= 20: +0.1); Paris AND capital AND France: 25
    Einstein AND Ulm            8   (5..19:  0.0)
    Curie AND Warsaw            2   (1..4:  -0.1)
    Mozart AND Tokyo            0   (both occur, never together: -0.2)
    Paris AND founded AND France 0  (RELCHECK's relation query: lowers +0.1 to -0.05)
"""
from __future__ import annotations

import json
from pathlib import Path

FILLER = "the quiet river flows past green fields and old stone walls . " * 90  # > 1000 tokens
FACT_DOCS = [
    "Paris is the capital of France. " * 25,
    "Einstein was born in Ulm. " * 8,
    "Curie studied in Warsaw. " * 2,
    "Mozart wrote music.",
    "Tokyo is a large city.",
    "A city was founded on a river.",
]
EXPECTED = {("Paris", "France"): 25, ("Einstein", "Ulm"): 8, ("Curie", "Warsaw"): 2, ("Mozart", "Tokyo"): 0}


def build_fact_index(root: Path, tokenizer) -> Path:
    """Write the fact documents between fillers to root/wiki.jsonl and index them under root/index
    with `tokenizer` (the tiny-llama Llama-2 tokenizer); returns the index directory."""
    from factrl.harness.services.corpus import build_index
    from factrl.harness.services.corpus.tokens import identify

    source = root / "wiki.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        for doc in FACT_DOCS:
            handle.write(json.dumps({"text": FILLER}) + "\n")
            handle.write(json.dumps({"text": doc}) + "\n")
        handle.write(json.dumps({"text": FILLER}) + "\n")
    out = root / "index"
    build_index(out, [str(source)], tokenizer, identify(tokenizer, "tiny-llama"), force=False)
    return out

"""NLI scorers shared by the methods that judge reasoning against evidence (FSPO, KnowRL).

`load_nli(cfg) -> NLIScorer`; `scorer.score([(premise, hypothesis), ...]) -> [probability]`;
`scorer.describe()` is the component entry results record. Backends: `hhem` (HHEM-2.1-Open),
`deberta` (sequence-classifier NLI, entailment found by label name), `standin` (deterministic
lexical stand-in, the offline default), by name through the registry's `nli` kind. Importing this package does not import torch.
"""
from .base import NLI_VERSION, NLIScorer, check_pairs, length_batches
from .config import (DEBERTA_ID, DEBERTA_REVISION, DEFAULT_BACKEND, HHEM_ID, HHEM_REVISION, NLISettings,
                     parse_config)
from .loader import load_nli


__all__ = ["DEBERTA_ID", "DEBERTA_REVISION", "DEFAULT_BACKEND", "HHEM_ID", "HHEM_REVISION",
           "NLISettings", "NLIScorer", "NLI_VERSION", "check_pairs", "length_batches", "load_nli", "parse_config"]

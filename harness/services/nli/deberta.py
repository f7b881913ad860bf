"""DeBERTa-style sequence-classifier NLI backend (KnowRL's fact check, docs/BASELINES.md §5.1).

tokenizer(premise, hypothesis, truncation=True, max_length=512) -> classifier -> softmax ->
the entailment class's probability. The entailment index is read from the model's id2label
by name (case-insensitive): MoritzLaurer's models put it at 0, microsoft's *-mnli at 2. A model
without exactly one entailment label is a ConfigError at load; KnowRL instead scored every
fact unsupported without a word.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.errors import ConfigError
from .base import NLI_VERSION
from .config import DEBERTA_ID, NLISettings, check_revision
from .model_scorer import ModelScorer
from .resolve import is_local, locate, pick_device, torch_dtype, weights_sha256


def entailment_index(id2label: dict[Any, Any], wanted: str, model: str) -> int:
    """The one class id whose label is `wanted` (case-insensitive), or a ConfigError."""
    matches = sorted(int(i) for i, label in id2label.items() if str(label).strip().lower() == wanted.strip().lower())
    labels = ", ".join(f"{int(i)}: {label}" for i, label in sorted(id2label.items(), key=lambda kv: int(kv[0])))
    if len(matches) != 1:
        how = "no" if not matches else "more than one"
        raise ConfigError(f"nli.model={model} has {how} label named {wanted!r} (id2label {{{labels}}}); use an NLI "
                          f"model whose config names its entailment class, or set nli.entailment_label to it.")
    return matches[0]


class DebertaScorer(ModelScorer):
    backend = "deberta"

    def __init__(self, cfg: NLISettings):
        super().__init__()
        self.cfg = cfg
        model_id = str(cfg.model_id)
        self.located = locate(model_id, check_revision(cfg, is_local(model_id)))
        self.sha256 = weights_sha256(self.located.path)
        self.batch_size = cfg.batch_size
        self.device = pick_device(cfg.device)

        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

        path = str(self.located.path)
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        # Resolved before the weights load, so a label problem costs no model load.
        self.id2label = {int(i): str(label) for i, label in (config.id2label or {}).items()}
        self.entailment = entailment_index(self.id2label, cfg.entailment_label, model_id)
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            path, config=config, local_files_only=True, dtype=torch_dtype(self._dtype_name())).to(self.device).eval()

    def _encode(self, pairs: list[tuple[str, str]]) -> list[dict[str, list[int]]]:
        enc = self.tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation=True,
                             max_length=self.cfg.max_length)
        keys = [key for key in ("input_ids", "attention_mask", "token_type_ids") if key in enc]
        return [{key: enc[key][i] for key in keys} for i in range(len(pairs))]

    def _positive(self, logits):
        import torch

        return torch.softmax(logits, dim=-1)[:, self.entailment]

    def describe(self) -> dict[str, Any]:
        faithful = not self.located.local and self.located.model == DEBERTA_ID
        entry: dict[str, Any] = {
            "kind": "nli", "backend": "deberta", "model": self.located.model, "revision": self.located.revision,
            "stand_in": not faithful,
            "label": "DeBERTa-v3-base NLI" if faithful else f"NLI classifier ({Path(self.located.model).name})",
            "version": NLI_VERSION, "sha256": self.sha256,
            "entailment_index": self.entailment, "id2label": {str(k): v for k, v in sorted(self.id2label.items())},
            "score": "softmax(logits)[entailment]", "max_length": self.cfg.max_length,
            "truncation": "tokenizer(premise, hypothesis, truncation=True): longest first",
            "batch_size": self.batch_size, "device": self.device, **self.precision(),
        }
        if not faithful:
            entry["note"] = (f"{self.located.model} is not {DEBERTA_ID} loaded by hub id at its pinned revision; "
                             f"load the hub id from the Hugging Face cache for a faithful KnowRL run.")
        return entry

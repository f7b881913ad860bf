"""HHEM-2.1-Open backend (FSPO's factuality model, docs/BASELINES.md §2.1).

Each (premise, hypothesis) pair is rendered with the checkpoint's own `prompt` (`{text1}` =
premise, `{text2}` = hypothesis; it starts with a literal `<pad>`), tokenised by the
foundation's tokenizer, and scored as softmax(position-0 logits)[1], exactly HHEM's
`predict()`. Differences from HHEM's code, all recorded by `describe()`:
- the premise is cut to `max_premise_tokens` foundation tokens (counted on the premise alone,
  cut at a token boundary of the original text); HHEM never truncates and its cost grows about
  quadratically with length. The hypothesis is never cut;
- batches are length-sorted, right-padded and run on the model's device;
- `code: harness` (default) loads the weights into our HHEM-shaped classes (`hhem_model.py`),
  which work on transformers 5.x; `code: remote` runs the checkpoint's own code, allowed only
  for HHEM's hub id or a local directory.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError, ModelNotFoundError
from .base import NLI_VERSION
from .config import HHEM_FOUNDATION_ID, HHEM_ID, PINNED, NLISettings, check_revision
from .model_scorer import ModelScorer
from .resolve import Located, is_local, locate, pick_device, torch_dtype, weights_sha256


class HHEMScorer(ModelScorer):
    backend = "hhem"

    def __init__(self, cfg: NLISettings):
        super().__init__()
        self.cfg = cfg
        model_id = str(cfg.model_id)
        local = is_local(model_id)
        if cfg.code == "remote" and not local and model_id != HHEM_ID:
            raise ConfigError(f"nli.code=remote runs the checkpoint's own Python code, allowed only for {HHEM_ID} "
                              f"or a local directory, not {model_id}; use nli.code=harness.")
        self.located = locate(model_id, check_revision(cfg, local))
        self.sha256 = weights_sha256(self.located.path)
        raw = json.loads((self.located.path / "config.json").read_text(encoding="utf-8"))
        # HHEM's config class carries both fields as class attributes too, so a config.json of
        # that architecture without them still means HHEM's defaults.
        hhem_class = "HHEMv2ForSequenceClassification" in (raw.get("architectures") or [])
        from .hhem_model import HHEM_PROMPT  # imports transformers: only once the model is found

        prompt = raw.get("prompt", HHEM_PROMPT if hhem_class else None)
        recorded = raw.get("foundation", HHEM_FOUNDATION_ID if hhem_class else None)
        if not isinstance(prompt, str) or not isinstance(recorded, str):
            raise ConfigError(f"nli.model={model_id}: config.json has no `prompt` / `foundation` field, so it is "
                              f"not an HHEM-2.1-shaped checkpoint; use nli.backend=deberta for sequence classifiers.")
        self.prompt = prompt
        self.foundation = self._locate_foundation(cfg.foundation or recorded)
        self.batch_size = cfg.batch_size
        self.device = pick_device(cfg.device)
        self._stats["truncated"] = 0

        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(self.foundation.path))
        self._check_prompt()
        self.model = self._load_model(torch_dtype(self._dtype_name())).to(self.device).eval()

    @staticmethod
    def _locate_foundation(foundation: str) -> Located:
        if is_local(foundation):
            return locate(foundation, None, option="nli.foundation")
        revision = PINNED.get(foundation)
        if revision is None:
            raise ConfigError(f"nli.foundation={foundation} has no pinned revision; give a local directory "
                              f"holding {HHEM_FOUNDATION_ID}'s config.json and tokenizer files.")
        return locate(foundation, revision, option="nli.foundation")

    def _check_prompt(self) -> None:
        """The template must take {text1}/{text2} and start with the tokenizer's pad token: HHEM
        classifies at position 0, so any other first token would silently read the wrong place."""
        try:
            empty = self.prompt.format(text1="", text2="")
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(f"nli.model={self.located.model}: config.json `prompt` must use {{text1}} (premise) "
                              f"and {{text2}} (hypothesis) only ({err!r}).") from None
        ids = self.tokenizer(empty)["input_ids"]
        if self.tokenizer.pad_token_id is None or not ids or ids[0] != self.tokenizer.pad_token_id:
            raise ConfigError(f"nli.foundation={self.foundation.model}: its tokenizer does not turn the prompt's "
                              f"leading `<pad>` into the pad id, so position 0 is not HHEM's classification "
                              f"token; point nli.foundation at {HHEM_FOUNDATION_ID}'s tokenizer.")

    def _load_model(self, dtype):
        path = str(self.located.path)
        if self.cfg.code == "remote":
            from transformers import AutoConfig, AutoModelForSequenceClassification

            config = AutoConfig.from_pretrained(path, trust_remote_code=True, local_files_only=True,
                                                foundation=str(self.foundation.path))
            model, info = AutoModelForSequenceClassification.from_pretrained(
                path, config=config, trust_remote_code=True, local_files_only=True, dtype=dtype,
                output_loading_info=True)
        else:
            from .hhem_model import HHEMv2Config, HHEMv2ForSequenceClassification

            config = HHEMv2Config.from_pretrained(path, local_files_only=True)
            config.foundation = str(self.foundation.path)
            model, info = HHEMv2ForSequenceClassification.from_pretrained(
                path, config=config, local_files_only=True, dtype=dtype, output_loading_info=True)
        if info["missing_keys"]:  # a randomly initialised head would score silently
            missing = sorted(info["missing_keys"])
            raise ModelNotFoundError(f"nli.model={self.located.model}: the checkpoint lacks {len(missing)} HHEM "
                                     f"weights (e.g. {missing[0]}); it is not HHEM-2.1's layout (t5.transformer.*, "
                                     f"t5.classifier.*).")
        return model

    def _truncate(self, premises: list[str]) -> list[str]:
        limit = self.cfg.max_premise_tokens
        enc = self.tokenizer(premises, add_special_tokens=False, return_offsets_mapping=True)
        out = []
        for text, ids, offsets in zip(premises, enc["input_ids"], enc["offset_mapping"]):
            if len(ids) > limit:
                text = text[:offsets[limit - 1][1]]
                self._stats["truncated"] += 1
            out.append(text)
        return out

    def _encode(self, pairs: list[tuple[str, str]]) -> list[dict[str, list[int]]]:
        premises = self._truncate([premise for premise, _ in pairs])
        texts = [self.prompt.format(text1=premise, text2=hypothesis)
                 for premise, (_, hypothesis) in zip(premises, pairs)]
        enc = self.tokenizer(texts)
        return [{"input_ids": ids, "attention_mask": mask}
                for ids, mask in zip(enc["input_ids"], enc["attention_mask"])]

    def _positive(self, logits):
        import torch

        if logits.dim() == 3:  # a plain token classifier: HHEM's forward keeps position 0 only
            logits = logits[:, 0, :]
        return torch.softmax(logits, dim=-1)[:, 1]

    def describe(self) -> dict[str, Any]:
        faithful = not self.located.local and self.located.model == HHEM_ID
        entry: dict[str, Any] = {
            "kind": "nli", "backend": "hhem", "model": self.located.model, "revision": self.located.revision,
            "stand_in": not faithful,
            "label": "HHEM-2.1-Open" if faithful else f"HHEM-shaped model ({Path(self.located.model).name})",
            "version": NLI_VERSION, "sha256": self.sha256, "code": self.cfg.code,
            "foundation": self.foundation.model, "foundation_revision": self.foundation.revision,
            "prompt_sha256": hashlib.sha256(self.prompt.encode()).hexdigest(),
            "score": "softmax(position-0 logits)[1]", "max_premise_tokens": self.cfg.max_premise_tokens,
            "truncation": "premise only, to max_premise_tokens foundation tokens; the hypothesis is never cut",
            "batch_size": self.batch_size, "device": self.device, **self.precision(),
        }
        if not faithful:
            entry["note"] = (f"{self.located.model} is not {HHEM_ID} loaded by hub id at its pinned revision "
                             f"(a local directory cannot be verified as HHEM); load the hub id from the Hugging "
                             f"Face cache for a faithful run.")
        return entry

"""Loading the NPM masked LM: `facebook/npm-single` by hub id, a local directory, or the stand-in.

- a hub id (the default: `facebook/npm-single`, RoBERTa-large, CC-BY-NC-4.0: never
  redistributed) is read from the local Hugging Face cache, downloaded only when online;
  offline and uncached it is a ModelNotFoundError naming the option and the fix, before any
  generation. `revision` is a 40-hex commit; left null, the commit actually loaded (the cache's
  or the hub's current one) is resolved and recorded with `revision_pinned: false`, so a result
  always says which weights scored it (no commit of npm-single could be verified offline to
  ship as the pin);
- a local directory in Hugging Face layout loads as is (tests save their tiny models there);
- `standin` builds (once, under the harness cache) a tiny randomly initialised RoBERTa
  (hidden 16, 2 layers, seed 0) with a byte-level BPE tokenizer trained on a fixed text, and
  loads it through the same path as a local directory. Its scores mean nothing: it is
  recorded as a stand-in in every result.
Always FP32 (docs/BASELINES.md §7: the paper's 0.3 threshold is for FP32 scores).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from factrl.harness.core.errors import ConfigError

from .npm import NPMScorer
from .stopwords import STOPWORDS

log = logging.getLogger(__name__)

PAPER_MODEL = "facebook/npm-single"
STANDIN = "standin"
STANDIN_VERSION = "1"
_HEX40 = re.compile(r"[0-9a-f]{40}")
OPTION = "eval.factscore_options.npm.model"

# The stand-in tokenizer's training text: fixed, so the vocabulary is the same on every machine.
_STANDIN_TEXT = (" ".join(STOPWORDS) + " Fact: the capital of France is Paris. The river Seine flows "
                 "through the city. Marie Curie was a physicist and chemist who won the Nobel Prize. "
                 "The film was directed by an American director and released in 1994. "
                 "He was born in London, England, and studied at the University of Cambridge.")


def _standin_dir() -> Path:
    from factrl.harness.services.models import cache_dir

    return cache_dir() / "factscore" / f"npm-standin-v{STANDIN_VERSION}"


def build_standin(out: Path, seed: int = 0) -> Path:
    """Write the stand-in masked LM (tokenizer + RobertaForMaskedLM) to `out`."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([_STANDIN_TEXT] * 4, vocab_size=600, min_frequency=2, special_tokens=specials,
                            show_progress=False)
    from tokenizers import processors

    bpe.post_processor = processors.RobertaProcessing(("</s>", bpe.token_to_id("</s>")),
                                                      ("<s>", bpe.token_to_id("<s>")))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                  cls_token="<s>", sep_token="</s>")
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    config = RobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=514, pad_token_id=tok.pad_token_id,
                           bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    RobertaForMaskedLM(config).save_pretrained(out)
    return out


def ensure_standin() -> Path:
    from factrl.harness.core.filelock import locked

    out = _standin_dir()
    if (out / "model.safetensors").is_file():
        return out
    with locked(out):
        if not (out / "model.safetensors").is_file():
            from factrl.harness.core.rundir import atomic_path

            with atomic_path(out) as tmp:
                build_standin(tmp)
    return out


def locate_model(model: str, revision: str | None) -> tuple[Path, dict[str, Any]]:
    """(directory, component facts) for `npm.model`, or a ConfigError / ModelNotFoundError."""
    from factrl.harness.core.hashing import sha256_file
    from factrl.harness.services.nli.resolve import is_local, locate

    if model == STANDIN:
        if revision is not None:
            raise ConfigError(f"{OPTION}=standin has no revisions; remove eval.factscore_options.npm.revision.")
        path = ensure_standin()
        return path, {"model": "tiny random RoBERTa (hidden 16, 2 layers)", "revision": f"standin-v{STANDIN_VERSION}",
                      "stand_in": True, "note": f"a randomly initialised masked LM stands in for {PAPER_MODEL}: "
                                                "its support scores are not meaningful"}
    local = is_local(model)
    if local and revision is not None:
        raise ConfigError(f"eval.factscore_options.npm.revision={revision} is set but {OPTION}={model} is a local "
                          f"directory; remove the revision.")
    if not local and revision is not None and not _HEX40.fullmatch(str(revision)):
        raise ConfigError(f"eval.factscore_options.npm.revision={revision!r} for {OPTION}={model}: give a 40-hex "
                          f"commit id, or null to record the commit that loads; a branch name can change the "
                          f"scores silently.")
    located = locate(model, revision, option=OPTION, standin=f"{OPTION}=standin")
    weights = next(iter(sorted(located.path.glob("*.safetensors"))), None)
    resolved = revision
    if not local and revision is None:
        # A hub snapshot folder is named by its commit: record what was loaded, and say it was not pinned.
        resolved = located.path.name if _HEX40.fullmatch(located.path.name) else None
        log.warning("%s=%s has no pinned revision; scoring with commit %s (recorded). Pin it with "
                    "eval.factscore_options.npm.revision for published comparisons.", OPTION, model, resolved)
    facts = {"model": model, "revision": resolved, "stand_in": model != PAPER_MODEL,
             "sha256": sha256_file(weights) if weights else None}
    if not local:
        facts["revision_pinned"] = revision is not None
    if facts["stand_in"]:
        facts["note"] = f"{model} is not {PAPER_MODEL}, the paper's masked LM"
    return located.path, facts


def load_npm(options: dict[str, Any], device: str = "cpu") -> tuple[NPMScorer, dict[str, Any]]:
    """(scorer, component entry) for the `npm` options: model, revision, batch_size, stopwords."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    path, facts = locate_model(str(options.get("model") or STANDIN), options.get("revision"))
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForMaskedLM.from_pretrained(path, local_files_only=True, dtype=torch.float32).to(device).eval()
    from factrl.harness.core.settings import defaults_from_yaml

    defaults = defaults_from_yaml("eval/base.yaml:factscore_options.npm")  # for a caller's partial options
    scorer = NPMScorer(model, tokenizer, device=device,
                       batch_size=int(options.get("batch_size") or defaults["batch_size"]),
                       stopwords=str(options.get("stopwords") or defaults["stopwords"]))
    component = {"kind": "masked_lm", "backend": "npm", **facts, "dtype": "float32",
                 "label": "NPM stand-in" if facts["stand_in"] else "NPM (npm-single)", **scorer.describe()}
    return scorer, component

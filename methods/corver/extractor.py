"""Triple extractors: sentences in, lists of [head, relation, tail] out.

Backends (config `method.extractor.backend`):
- `quco`: the paper's extractor, `ZhishanQ/QuCo-extractor-0.5B` (a Qwen2.5-0.5B-Instruct
  fine-tune), loaded by hub id (offline: from the local Hugging Face cache). It is the
  `llm` backend with that model and the paper's decoding settings.
- `llm`: any causal LM with the same prompt and parser (parsing.py: the released QuCo-RAG ones).
- `heuristic`: no model: capitalised spans and a copula pattern; for offline runs and tests.

Every backend takes all sentences of all completions of a step in one call, answers
repeated sentences from a sentence -> triples cache (docs/PROTOCOL.md §2), and reports what the
call cost in `last_stats` (seconds, sentences, cache hits, generated prompts).
"""
from __future__ import annotations

import time
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core.claims import heuristic_triples
from factrl.harness.core.registry import get, names
from factrl.harness.core.settings import Settings

from .parsing import build_prompt, parse_triples

QUCO_ID = "ZhishanQ/QuCo-extractor-0.5B"
# Appendix A.4: "BF16, temperature 0.7, top-p 0.8, top-k 20, and repetition penalty 1.1,
# with at most 256 new tokens and a total context limit of 4,096".
PAPER_DECODING = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
                  "repetition_penalty": 1.1, "max_new_tokens": 256}
PAPER_CONTEXT = 4096


class Extractor:
    """Base: batching, deduplication and the sentence cache. Subclasses implement `_run`."""

    name = "base"

    def __init__(self, *, cache: bool, cache_size: int):
        self.cache_enabled = cache
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[str, list[list[str]]] = OrderedDict()
        self.last_stats: dict[str, float] = {}

    def _run(self, sentences: list[str]) -> list[list[list[str]]]:
        raise NotImplementedError

    def extract(self, sentences: Sequence[str]) -> list[list[list[str]]]:
        """Triples of every sentence (one list per sentence, in order), in one batched pass."""
        started = time.perf_counter()
        keys = [unicodedata.normalize("NFC", s).strip() for s in sentences]
        found: dict[str, list[list[str]]] = {}
        hits = 0
        if self.cache_enabled:
            for key in set(keys):
                if key in self._cache:
                    self._cache.move_to_end(key)
                    found[key] = self._cache[key]
                    hits += 1
        todo = [k for k in dict.fromkeys(keys) if k not in found and k]
        if todo:
            results = self._run(todo)
            if len(results) != len(todo):
                raise RuntimeError(f"extractor '{self.name}' returned {len(results)} rows for {len(todo)} sentences")
            for key, triples in zip(todo, results):
                found[key] = triples
                if self.cache_enabled:
                    self._cache[key] = triples
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        out = [[list(t) for t in found.get(k, [])] for k in keys]
        self.last_stats = {"seconds": time.perf_counter() - started, "sentences": float(len(keys)),
                           "unique": float(len(set(keys))), "cache_hits": float(hits),
                           "extracted": float(len(todo)), **getattr(self, "_run_stats", {})}
        return out

    def close(self) -> None:
        """Release the model (the reward calls this when a run ends)."""


# --------------------------------------------------------------------------- heuristic
# The triple heuristic is shared (factrl.harness.core.claims): the reference judge's claim splitter uses it too.


class HeuristicExtractor(Extractor):
    name = "heuristic"

    def _run(self, sentences: list[str]) -> list[list[list[str]]]:
        self._run_stats = {"generated": 0.0, "overlong": 0.0}
        return [heuristic_triples(s) for s in sentences]


# --------------------------------------------------------------------------- llm
def _model_spec(model: Any) -> dict[str, Any]:
    """A model config (name/source/id/revision/path) from a mapping or a short string."""
    from factrl.harness.services.models import EMBEDDED

    if isinstance(model, Mapping) or hasattr(model, "items"):
        spec = {k: model[k] for k in model}
        spec.setdefault("source", "hub")
        spec.setdefault("name", str(spec.get("id") or spec.get("path")))
        return spec
    text = str(model)
    if text in EMBEDDED:
        return {"name": text, "source": "embedded"}
    if text.startswith(("/", ".", "~")):
        return {"name": text.rstrip("/").split("/")[-1], "source": "path", "path": text}
    return {"name": text.split("/")[-1], "source": "hub", "id": text, "revision": None}


class LLMExtractor(Extractor):
    """A causal LM prompted per sentence; sentences are generated in length-sorted batches."""

    name = "llm"

    def __init__(self, model: Any, tokenizer: Any, *, do_sample: bool = True, temperature: float = 0.7,
                 top_p: float = 0.8, top_k: int = 20, repetition_penalty: float = 1.1,
                 max_new_tokens: int = 256, max_context: int = PAPER_CONTEXT, batch_size: int = 128,
                 seed: int = 42, chat_template: bool = True, **cache_kwargs: Any):
        super().__init__(**cache_kwargs)
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.seed, self.calls = int(batch_size), int(seed), 0
        self.max_new_tokens, self.max_context = int(max_new_tokens), int(max_context)
        self.use_chat = bool(chat_template) and bool(getattr(tokenizer, "chat_template", None))
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        from transformers import GenerationConfig

        # Every decoding setting is spelled out, and the checkpoint's own generation_config.json
        # (Qwen ships sampling defaults there) is replaced by an empty one, because generate()
        # fills any setting left unset from it.
        sampling = (dict(temperature=float(temperature), top_p=float(top_p), top_k=int(top_k)) if do_sample
                    else dict(temperature=1.0, top_p=1.0, top_k=0))  # greedy: neutral values
        self.generation = GenerationConfig(
            do_sample=bool(do_sample), **sampling, repetition_penalty=float(repetition_penalty),
            max_new_tokens=self.max_new_tokens, eos_token_id=self._stop_ids(), pad_token_id=tokenizer.pad_token_id,
            num_beams=1,
        )
        if model is not None:
            model.generation_config = GenerationConfig()

    def _stop_ids(self) -> list[int]:
        tok = self.tokenizer
        ids = [tok.eos_token_id] if tok.eos_token_id is not None else []
        vocab = tok.get_vocab()
        for marker in ("<|im_end|>", "<|endoftext|>"):  # Qwen's end-of-turn markers
            if marker in vocab and vocab[marker] not in ids:
                ids.append(vocab[marker])
        return ids

    def prompt_ids(self, sentence: str) -> list[int]:
        text = build_prompt(sentence)
        if self.use_chat:
            ids = self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True,
                                                     add_generation_prompt=True)
            return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        return list(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def _run(self, sentences: list[str]) -> list[list[list[str]]]:
        import torch

        prompts = [self.prompt_ids(s) for s in sentences]
        results: list[list[list[str]]] = [[] for _ in sentences]
        # A sentence too long for the context (a run-on loop) gets no triples, not a crash.
        usable = [i for i, p in enumerate(prompts) if len(p) + self.max_new_tokens <= self.max_context]
        order = sorted(usable, key=lambda i: -len(prompts[i]))  # longest first: less padding
        device = next(self.model.parameters()).device
        pad = self.tokenizer.pad_token_id
        generated_tokens = 0
        devices = [device] if device.type == "cuda" else []
        # A private RNG stream: reproducible extraction that leaves the policy's sampling alone.
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(self.seed + self.calls)
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                width = max(len(prompts[i]) for i in batch)
                ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, width - len(prompts[i]):] = torch.tensor(prompts[i])
                    mask[row, width - len(prompts[i]):] = 1
                out = self.model.generate(input_ids=ids.to(device), attention_mask=mask.to(device),
                                          generation_config=self.generation)
                new = out[:, width:].tolist()
                for row, i in enumerate(batch):
                    tokens = [t for t in new[row] if t != pad]
                    generated_tokens += len(tokens)
                    text = self.tokenizer.decode(tokens, skip_special_tokens=True)
                    results[i] = parse_triples(text)
        self.calls += 1
        self._run_stats = {"generated": float(len(usable)), "overlong": float(len(sentences) - len(usable)),
                           "generated_tokens": float(generated_tokens)}
        return results

    def close(self) -> None:
        self.model = None


def _load_llm(spec: dict[str, Any], dtype: str, device: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from factrl.harness.services import models
    from factrl.harness.services.models.shapes import torch_dtype
    from factrl.harness.core.errors import ModelNotFoundError

    if spec.get("source") == "path":
        spec = {**spec, "source": "hub"}  # resolve() takes the `path` key first
    try:
        identity = models.resolve(spec)
    except ModelNotFoundError as err:
        raise ModelNotFoundError(f"{err} (CorVer extractor; offline, set method.extractor.backend=heuristic)") from None
    tokenizer = AutoTokenizer.from_pretrained(identity.path)
    device = device if device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    model = AutoModelForCausalLM.from_pretrained(identity.path, dtype=torch_dtype(dtype)).to(device)
    model.eval()
    return model, tokenizer, identity


@dataclass(frozen=True)
class ExtractorSettings(Settings):
    """`method.extractor.*` of method=corver; configs/method/corver.yaml ("triple extractor")
    holds every default and its quote."""

    OWNER = "method.extractor"
    DEFAULTS = "method/corver.yaml:extractor"
    RANGES = {"temperature": "[0, inf)", "top_p": "(0, 1]", "top_k": "[0, inf)", "repetition_penalty": "(0, inf)",
              "max_new_tokens": "[1, inf)", "max_context": "[1, inf)", "batch_size": "[1, inf)",
              "seed": "[0, 4294967295]", "cache_size": "[0, inf)"}

    backend: str  # quco | llm | heuristic
    model: str | None  # quco / llm: a hub id, a local directory or an embedded model name
    revision: str | None
    dtype: str
    device: str
    do_sample: bool
    temperature: float
    top_p: float
    top_k: int
    repetition_penalty: float
    max_new_tokens: int
    max_context: int
    batch_size: int
    seed: int
    chat_template: bool
    cache: bool
    cache_size: int

    def __post_init__(self) -> None:
        if self.backend not in names("extractor"):  # the registry's `extractor` kind
            raise ValueError(f"backend={self.backend!r}: choose one of {', '.join(names('extractor'))}")
        if self.backend == "llm" and self.model is None:
            raise ValueError("backend=llm needs method.extractor.model (a hub id, a local directory or an "
                             "embedded model name such as tiny-llama)")


def build_extractor(cfg: ExtractorSettings | Mapping[str, Any] | None) -> Extractor:
    """The extractor that `method.extractor` settings (or a mapping over the YAML's) describe."""
    s = cfg if isinstance(cfg, ExtractorSettings) else ExtractorSettings.from_mapping(cfg)
    return get("extractor", s.backend)(s)


def build_heuristic(s: ExtractorSettings) -> Extractor:
    """The registry's `extractor` entry `heuristic`."""
    return HeuristicExtractor(cache=s.cache, cache_size=s.cache_size)


def build_llm(s: ExtractorSettings) -> Extractor:
    """The registry's `extractor` entries `quco` and `llm`: a causal LM (QuCo-extractor by default)."""
    cache = {"cache": s.cache, "cache_size": s.cache_size}
    spec = _model_spec(s.model or QUCO_ID)
    if s.revision and not spec.get("revision"):
        spec["revision"] = s.revision
    loaded, tokenizer, identity = _load_llm(spec, s.dtype, s.device)
    ext = LLMExtractor(loaded, tokenizer, do_sample=s.do_sample, temperature=s.temperature, top_p=s.top_p,
                       top_k=s.top_k, repetition_penalty=s.repetition_penalty, max_new_tokens=s.max_new_tokens,
                       max_context=s.max_context, batch_size=s.batch_size, seed=s.seed,
                       chat_template=s.chat_template, **cache)
    ext.name = s.backend
    ext.identity = identity
    return ext


__all__ = ["Extractor", "ExtractorSettings", "HeuristicExtractor", "LLMExtractor", "PAPER_DECODING",
           "QUCO_ID", "build_extractor", "build_heuristic", "build_llm", "heuristic_triples"]

"""The nonparametric masked-LM support score of one claim against its passages (BASELINES 7).

FActScore's `npm.py` algorithm, with everything it hard-codes derived from the tokenizer:
1. every passage token except the tokenizer's special tokens gets its final-layer vector p_j
   and its id tok_j (passages concatenated);
2. the query is BOS + tokens("Fact:") + tokens(" " + claim) + EOS; the positions after the
   prefix that are neither special nor stopword ids are scorable (FActScore skips through id 35,
   RoBERTa's ":", and ids 0 / 2: here the prefix length and special ids come from the tokenizer);
3. for each scorable position i, a copy with token i replaced by the mask token (all copies in
   one batch); q_i = the final-layer state at the mask;
4. s_ij = exp(<q_i, p_j> / sqrt(d)); P_i = sum over j with tok_j = gold_i of s_ij, divided by
   sum over all j (log-sum-exp, so large dot products do not overflow); 0 when gold_i does not
   occur in the passages. The masked LM's own softmax is not used;
5. the claim's score is the mean of P_i; supported when it is > 0.3 (PROTOCOL 6).
A claim with no scorable token has no score (`None`): the caller skips and counts it
(FActScore crashes there, BASELINES 9).
Stopwords (stopwords.py): a word list mapped through the tokenizer (default) or FActScore's 211
RoBERTa ids; on a RoBERTa vocabulary `describe()` records how the two differ.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Sequence

from . import stopwords as stoplib
from .stopwords import STOPWORDS, STOPWORDS_VERSION, stopword_ids  # noqa: F401 - re-exported

NPM_VERSION = "1"
THRESHOLD = 0.3  # PROTOCOL 6: supported when the probability is > 0.3
PREFIX = "Fact:"

class NPMScorer:
    """Scores claims against passages with a masked LM (`model` in eval mode, FP32)."""

    def __init__(self, model: Any, tokenizer: Any, *, device: str = "cpu", batch_size: int = 32,
                 cache_size: int = 4096, stopwords: str = "words"):
        import torch

        self.torch, self.model, self.tokenizer, self.device = torch, model, tokenizer, device
        self.batch_size = batch_size
        if tokenizer.mask_token_id is None:
            raise ValueError("the NPM tokenizer has no mask token")
        self.mask_id = int(tokenizer.mask_token_id)
        self.special_ids = frozenset(int(i) for i in tokenizer.all_special_ids)
        self.stopword_source = stopwords
        self.stop_ids = stoplib.stopword_ids(tokenizer, stopwords) - self.special_ids
        # On npm-single's vocabulary, record how the derived ids compare with FActScore's (BASELINES 7).
        self.stopword_diff = (stoplib.diff(tokenizer, stoplib.word_ids(tokenizer) - self.special_ids)
                              if stoplib.is_roberta_vocab(tokenizer) else None)
        self.prefix_ids = list(tokenizer(PREFIX, add_special_tokens=False)["input_ids"])
        self.bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
        self.eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
        config = model.config
        self.dim = int(config.hidden_size)
        # RoBERTa numbers positions from padding_idx + 1, so two positions are never usable.
        offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0
        self.max_length = int(config.max_position_embeddings) - offset
        self._passages: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._cache_size = cache_size
        self.stats = {"claims": 0, "unscorable": 0, "positions": 0, "passages_encoded": 0}

    # -- representations --------------------------------------------------------------
    def _hidden(self, ids: Any, mask: Any) -> Any:
        with self.torch.no_grad():
            out = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                             output_hidden_states=True)
        return out.hidden_states[-1].float()

    def encode_passage(self, text: str) -> tuple[Any, Any]:
        """(vectors (J, d), ids (J,)) of the passage's non-special tokens, memoised by text."""
        if text in self._passages:
            self._passages.move_to_end(text)
            return self._passages[text]
        torch = self.torch
        enc = self.tokenizer(text, truncation=True, max_length=self.max_length, return_tensors="pt")
        hidden = self._hidden(enc["input_ids"], enc["attention_mask"])[0].cpu()
        ids = enc["input_ids"][0]
        keep = torch.tensor([int(t) not in self.special_ids for t in ids.tolist()], dtype=torch.bool)
        item = (hidden[keep], ids[keep])
        self._passages[text] = item
        self.stats["passages_encoded"] += 1
        if len(self._passages) > self._cache_size:
            self._passages.popitem(last=False)
        return item

    def query(self, claim: str) -> tuple[list[int], list[int]]:
        """(input ids, scorable positions) of the claim's query."""
        fact = list(self.tokenizer(" " + claim.strip(), add_special_tokens=False)["input_ids"])
        room = self.max_length - 2 - len(self.prefix_ids)
        ids = [i for i in (self.bos,) if i is not None] + self.prefix_ids + fact[:room]
        start = len(ids) - len(fact[:room])
        if self.eos is not None:
            ids.append(self.eos)
        positions = [p for p in range(start, start + len(fact[:room]))
                     if ids[p] not in self.special_ids and ids[p] not in self.stop_ids]
        return ids, positions

    # -- scoring ----------------------------------------------------------------------
    def score(self, claim: str, passages: Sequence[str]) -> float | None:
        """The claim's mean support probability, or None when it has no scorable token."""
        torch = self.torch
        self.stats["claims"] += 1
        ids, positions = self.query(claim)
        if not positions:
            self.stats["unscorable"] += 1
            return None
        self.stats["positions"] += len(positions)
        encoded = [self.encode_passage(p) for p in passages if p and p.strip()]
        if not encoded or sum(len(e[1]) for e in encoded) == 0:
            return 0.0
        vectors = torch.cat([e[0] for e in encoded])  # (J, d)
        tokens = torch.cat([e[1] for e in encoded])  # (J,)
        probs: list[float] = []
        for lo in range(0, len(positions), self.batch_size):
            chunk = positions[lo:lo + self.batch_size]
            batch = torch.tensor([ids] * len(chunk))
            batch[torch.arange(len(chunk)), torch.tensor(chunk)] = self.mask_id
            hidden = self._hidden(batch, torch.ones_like(batch))
            q = hidden[torch.arange(len(chunk)), torch.tensor(chunk)].cpu()  # (m, d)
            scores = q @ vectors.T / math.sqrt(self.dim)  # (m, J)
            total = torch.logsumexp(scores, dim=1)
            for row, position in enumerate(chunk):
                match = tokens == ids[position]
                if not bool(match.any()):
                    probs.append(0.0)
                    continue
                probs.append(float(torch.exp(torch.logsumexp(scores[row][match], dim=0) - total[row])))
        return sum(probs) / len(probs)

    def describe(self) -> dict[str, Any]:
        return {"version": NPM_VERSION, "stopwords_version": STOPWORDS_VERSION, "threshold": THRESHOLD,
                "prefix": PREFIX, "prefix_tokens": len(self.prefix_ids), "stopword_ids": len(self.stop_ids),
                "stopwords": self.stopword_source, "stopword_diff": self.stopword_diff,
                "special_ids": sorted(self.special_ids), "mask_id": self.mask_id, "dim": self.dim,
                "max_length": self.max_length}

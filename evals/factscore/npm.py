"""The nonparametric masked-LM support score of one claim against its passages (docs/BASELINES.md §7).

FActScore's `NPM.get_probabilty` (shmsw25/FActScore@f28272d factscore/npm.py:93-161), with the
ids it hard-codes for RoBERTa (0 `<s>`, 2 `</s>`, 35 ":") taken from the tokenizer:
1. passages: each text is tokenized with its special tokens and the OUTER `<s>`/`</s>` are cut
   before the forward (npm.py:43-46, :99); sentence markers inside the text (the FActScore DB
   keeps `<s>..</s>` around each sentence) go through the model, and the vectors of every BOS /
   EOS id are dropped (:87-88). Each kept token gives its final-layer vector p_j and id tok_j;
2. the query is `"Fact: " + claim` tokenized with specials, cut at the first EOS, BOS dropped
   (:107-110); positions up to and including the first ":" token are the prefix (:129-134);
   special and stopword ids are never scored (:135);
3. for each scorable position i, the query ids with i replaced by the mask token are DECODED to
   text and tokenized again (:137, :68), as FActScore does (the mask loses the leading space of
   the token it replaces); q_i = the final-layer state at the first mask of that forward;
4. s_ij = exp(<q_i, p_j> / sqrt(d)); P_i = sum over j with tok_j = gold_i of s_ij, divided by
   sum over all j (log-sum-exp here, so large dot products do not overflow where FActScore's
   plain exp would); 0 when gold_i does not occur in the passages. The masked LM's softmax is
   not used;
5. the claim's score is the mean of P_i; supported when it is > 0.3 (docs/PROTOCOL.md §6).
A claim with no scorable token has no score (`None`): the caller skips and counts it
(FActScore crashes there, docs/BASELINES.md §9).
Stopwords (stopwords.py): FActScore's 211 RoBERTa ids on a RoBERTa vocabulary (`auto`, the
default), else a word list mapped through the tokenizer; `describe()` records which.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Sequence

from . import stopwords as stoplib
from .stopwords import STOPWORDS, STOPWORDS_VERSION, stopword_ids  # noqa: F401 - re-exported

NPM_VERSION = "2"  # 2: passages without the outer BOS/EOS; query as FActScore builds it (decode + re-tokenize)
THRESHOLD = 0.3  # docs/PROTOCOL.md §6: supported when the probability is > 0.3
PREFIX = "Fact: "


def _pad(rows: list[list[int]], pad_id: int) -> tuple[list[list[int]], list[list[int]]]:
    """Right padding with attention 0, as npm.py:47-56 (the pad id never reaches a kept position)."""
    width = max(len(r) for r in rows)
    return ([r + [pad_id] * (width - len(r)) for r in rows],
            [[1] * len(r) + [0] * (width - len(r)) for r in rows])


class NPMScorer:
    """Scores claims against passages with a masked LM (`model` in eval mode, FP32)."""

    def __init__(self, model: Any, tokenizer: Any, *, device: str, batch_size: int, stopwords: str,
                 cache_size: int = 4096):
        """device, batch_size, stopwords: eval.factscore_options.npm (load_npm reads them)."""
        import torch

        self.torch, self.model, self.tokenizer, self.device = torch, model, tokenizer, device
        self.batch_size = batch_size
        if tokenizer.mask_token_id is None:
            raise ValueError("the NPM tokenizer has no mask token")
        self.mask_id = int(tokenizer.mask_token_id)
        self.special_ids = frozenset(int(i) for i in tokenizer.all_special_ids)
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
        self.bos, self.eos = bos, eos
        # FActScore's ids 0 and 2: the sequence markers, whose vectors are never kept (npm.py:87-88).
        self.marker_ids = frozenset(int(i) for i in (bos, eos, tokenizer.cls_token_id, tokenizer.sep_token_id)
                                    if i is not None)
        self.stopword_source = stoplib.resolve_source(tokenizer, stopwords)
        self.stop_ids = stoplib.stopword_ids(tokenizer, self.stopword_source) - self.special_ids
        # On npm-single's vocabulary, record how the word list's ids compare with FActScore's (docs/BASELINES.md §7).
        self.stopword_diff = (stoplib.diff(tokenizer, stoplib.word_ids(tokenizer) - self.special_ids)
                              if stoplib.is_roberta_vocab(tokenizer) else None)
        self.prefix_ids = list(tokenizer(PREFIX.strip(), add_special_tokens=False)["input_ids"])
        self.colon_id = self.prefix_ids[-1]  # FActScore's 35: the ":" that ends "Fact:"
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        config = model.config
        self.dim = int(config.hidden_size)
        # RoBERTa numbers positions from padding_idx + 1, so two positions are never usable.
        offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0
        self.max_length = int(config.max_position_embeddings) - offset
        self._passages: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._cache_size = cache_size
        self.stats = {"claims": 0, "unscorable": 0, "positions": 0, "passages_encoded": 0}

    # -- representations --------------------------------------------------------------
    def _hidden(self, rows: list[list[int]]) -> Any:
        ids, mask = _pad(rows, self.pad_id)
        with self.torch.no_grad():
            out = self.model(input_ids=self.torch.tensor(ids, device=self.device),
                             attention_mask=self.torch.tensor(mask, device=self.device), output_hidden_states=True)
        return out.hidden_states[-1].float().cpu()

    def passage_ids(self, text: str) -> list[int]:
        """The ids the passage's forward receives: with specials, the outer BOS / EOS cut (npm.py:43-46)."""
        ids = list(self.tokenizer(text.strip())["input_ids"])
        if ids and ids[0] == self.bos:
            ids = ids[1:]
        if ids and ids[-1] == self.eos:
            ids = ids[:-1]
        return ids[:self.max_length]

    def encode_passage(self, text: str) -> tuple[Any, Any]:
        """(vectors (J, d), ids (J,)) of the passage's tokens other than BOS / EOS, memoised by text."""
        if text in self._passages:
            self._passages.move_to_end(text)
            return self._passages[text]
        torch = self.torch
        ids = self.passage_ids(text)
        if not ids:
            item = (torch.zeros(0, self.dim), torch.zeros(0, dtype=torch.long))
        else:
            hidden = self._hidden([ids])[0]
            keep = torch.tensor([t not in self.marker_ids for t in ids], dtype=torch.bool)
            item = (hidden[keep], torch.tensor(ids)[keep])
        self._passages[text] = item
        self.stats["passages_encoded"] += 1
        if len(self._passages) > self._cache_size:
            self._passages.popitem(last=False)
        return item

    def query(self, claim: str) -> tuple[list[int], list[int]]:
        """(query ids without BOS / EOS, scorable positions) of the claim (npm.py:107-135)."""
        ids = list(self.tokenizer(PREFIX + claim.strip())["input_ids"])
        if self.eos is not None and self.eos in ids:
            ids = ids[:ids.index(self.eos)]
        if ids and ids[0] == self.bos:
            ids = ids[1:]
        ids = ids[:self.max_length - 2]
        end = ids.index(self.colon_id) if self.colon_id in ids else len(ids)
        # FActScore skips ids 0 / 2 here; every special id is skipped (a literal "<mask>" in a claim
        # would otherwise be scored at the wrong position).
        positions = [p for p in range(end + 1, len(ids)) if ids[p] not in self.special_ids
                     and ids[p] not in self.stop_ids]
        return ids, positions

    def masked_inputs(self, ids: list[int], positions: Sequence[int]) -> list[list[int]]:
        """The forward ids of each masked copy: decoded to text and tokenized again (npm.py:137, :68)."""
        texts = [self.tokenizer.decode(ids[:p] + [self.mask_id] + ids[p + 1:]) for p in positions]
        rows = [list(r)[:self.max_length] for r in self.tokenizer(texts)["input_ids"]]
        for row, text in zip(rows, texts):
            if self.mask_id not in row:
                raise ValueError(f"the NPM tokenizer lost the mask token of {text!r}")
        return rows

    # -- scoring ----------------------------------------------------------------------
    def score(self, claim: str, passages: Sequence[str]) -> float | None:
        """The claim's mean support probability, or None when it has no scorable token."""
        found = self.score_positions(claim, passages)
        return None if found is None else sum(found) / len(found)

    def score_positions(self, claim: str, passages: Sequence[str]) -> list[float] | None:
        """P_i of every scorable position of the claim, in order (None: no scorable position)."""
        torch = self.torch
        self.stats["claims"] += 1
        ids, positions = self.query(claim)
        if not positions:
            self.stats["unscorable"] += 1
            return None
        self.stats["positions"] += len(positions)
        encoded = [self.encode_passage(p) for p in passages if p and p.strip()]
        if not encoded or sum(len(e[1]) for e in encoded) == 0:
            return [0.0] * len(positions)
        vectors = torch.cat([e[0] for e in encoded])  # (J, d)
        tokens = torch.cat([e[1] for e in encoded])  # (J,)
        probs: list[float] = []
        for lo in range(0, len(positions), self.batch_size):
            chunk = positions[lo:lo + self.batch_size]
            rows = self.masked_inputs(ids, chunk)
            hidden = self._hidden(rows)
            at = torch.tensor([row.index(self.mask_id) for row in rows])
            q = hidden[torch.arange(len(rows)), at]  # (m, d)
            scores = q @ vectors.T / math.sqrt(self.dim)  # (m, J)
            total = torch.logsumexp(scores, dim=1)
            for row, position in enumerate(chunk):
                match = tokens == ids[position]
                if not bool(match.any()):
                    probs.append(0.0)
                    continue
                probs.append(float(torch.exp(torch.logsumexp(scores[row][match], dim=0) - total[row])))
        return probs

    def describe(self) -> dict[str, Any]:
        return {"version": NPM_VERSION, "stopwords_version": STOPWORDS_VERSION, "threshold": THRESHOLD,
                "prefix": PREFIX, "prefix_tokens": len(self.prefix_ids), "stopword_ids": len(self.stop_ids),
                "stopwords": self.stopword_source, "stopword_diff": self.stopword_diff,
                "special_ids": sorted(self.special_ids), "mask_id": self.mask_id, "dim": self.dim,
                "max_length": self.max_length, "passage_encoding": "outer BOS/EOS cut before the forward",
                "masking": "decode + re-tokenize (FActScore)"}

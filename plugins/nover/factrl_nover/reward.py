"""The NOVER reward callable: a generation batch -> one reward per completion, spread on its tokens.

One call scores whole groups (B = n x G consecutive completions of one pool row):
1. the strict format check of each completion (the model's response prefix, e.g. "<think>",
   put back in front, since the prompt already ended with it);
2. for the well-formed ones, the released perplexity texts (templates.py): the plain-text
   context "\nQuestion: Question: {q}\n\n..." + "\n<think>\n{reasoning}\n</think>\n" and the
   target "\n<answer>\n{reference}\n</answer>", tokenised as the release does (the target's
   tokens are those of tokenizer(context + target) after len(tokenizer(context)), special
   tokens included, utils.py:78-95); ONE teacher-forced pass of the policy's proxy adapter over
   all of them (`PolicyHandle.target_logprobs`), the mean NLL scaled by the length rule with
   N_r = len(tokenizer(reasoning)), special tokens included (utils.py:84-85);
3. ranks and efficiency inside each group (scoring.py), combined with the weights.
Each group is read from its own row, never the first prompt's (the released code's defect,
docs/BASELINES.md §9). The GRPO engine takes the completion's mean token return as its reward, so
every token carries R.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core.answers import extract_answer, match_closed_book, strict_correct
from factrl.harness.core.errors import HarnessError
from factrl.harness.core.method import RewardOutput
from factrl.harness.core.prompts import response_prefix
from factrl.harness.core.settings import Settings

from .scoring import LENGTH_RULES, TIES, Weights, parse_strict, reasoning_perplexity, score_group
from .templates import ppl_texts

PROXY_ADAPTER = "nover_proxy"


# `method.*` of method=nover: the plugin's one place for its defaults (it ships no
# configs/method/nover.yaml); NoverMethod.config_defaults hands them to Hydra.
NOVER_DEFAULTS = {
    "w_format": 1.0, "w_reasoning": 1.0, "w_efficiency": 1.0,  # the released reward weights
    "length_rule": "released",  # released: log10 (thinkwee/NOVER); paper: natural log
    "rank_ties": "released",  # released: stable sort, tied P get distinct ranks; shared: the better rank
    "proxy": True,  # False: score with the trained adapter itself (no separate proxy)
    "proxy_keep": 0.9,  # at each checkpoint: proxy = keep * proxy + (1 - keep) * policy
    # The KL term's reference: proxy (released: the proxy is TRL's ref_model, trainer.py:95-99,
    # 250-255) or base (the adapter-disabled base model, TRL's PEFT default).
    "kl_reference": "proxy",
    "batch_size": None,  # sequences per forward pass; None = the whole batch in one
    # A guard (docs/CONTRACTS.md "Guards"; none = NOVER's reward, which never reads the answer
    # block): match = a well-formed completion whose answer does not match the row's gold under
    # the protocol's matcher earns its format term only (no rank, no efficiency term); it stays
    # in its group's ranking, so no other completion's reward changes. strict = the same with strict
    # accuracy v2's verdict (harness/core/answers/strict.py) instead of the matcher: an answer that
    # contains the gold but negates, retracts or lists it, or a second answer block, is gated too.
    "answer_gate": "none",
}
KL_REFERENCES = ("proxy", "base")
ANSWER_GATES = ("none", "match", "strict")


@dataclass(frozen=True)
class NoverSettings(Settings):
    """`method.*` of method=nover (NOVER_DEFAULTS documents each key)."""

    OWNER = "method"
    DEFAULTS = NOVER_DEFAULTS
    RANGES = {"w_format": "[0, inf)", "w_reasoning": "[0, inf)", "w_efficiency": "[0, inf)", "proxy_keep": "[0, 1]",
              "batch_size": "[1, inf)"}
    IGNORE = ("name",)

    w_format: float
    w_reasoning: float
    w_efficiency: float
    length_rule: str
    rank_ties: str
    proxy: bool
    proxy_keep: float
    kl_reference: str
    batch_size: int | None
    answer_gate: str

    def __post_init__(self) -> None:
        if self.length_rule not in LENGTH_RULES:
            raise ValueError(f"length_rule={self.length_rule!r}: choose one of {LENGTH_RULES}")
        if self.rank_ties not in TIES:
            raise ValueError(f"rank_ties={self.rank_ties!r}: choose one of {TIES}")
        if self.kl_reference not in KL_REFERENCES:
            raise ValueError(f"kl_reference={self.kl_reference!r}: choose one of {KL_REFERENCES}")
        if self.kl_reference == "proxy" and not self.proxy:
            raise ValueError("kl_reference=proxy needs proxy=true; set kl_reference=base to train without a proxy")
        if not 0.0 <= self.proxy_keep <= 1.0:
            raise ValueError(f"proxy_keep={self.proxy_keep} must lie in [0, 1]")
        if self.answer_gate not in ANSWER_GATES:
            raise ValueError(f"answer_gate={self.answer_gate!r}: choose one of {ANSWER_GATES} (none: NOVER's reward)")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size={self.batch_size} must be at least 1 (or null: one pass)")

    @property
    def weights(self) -> Weights:
        return Weights(self.w_format, self.w_reasoning, self.w_efficiency)

    @property
    def adapter(self) -> str | None:
        return PROXY_ADAPTER if self.proxy else None

    @property
    def kl_adapter(self) -> str | None:
        """The adapter copy the KL term compares with (None: the base model)."""
        return PROXY_ADAPTER if self.kl_reference == "proxy" else None


def _row_key(row: Mapping[str, Any]) -> Any:
    return row.get("id", row.get("question"))


class NoverReward:
    """reward(*, prompts, completions, completion_ids, rows, policy, **kwargs) -> RewardOutput."""

    def __init__(self, *, tokenizer: Any, model_cfg: Any, group_size: int, settings: NoverSettings | None = None,
                 save_steps: int | None = None):
        if group_size < 1:
            raise ValueError(f"group_size={group_size} must be at least 1")
        self.tokenizer, self.model_cfg, self.group_size = tokenizer, model_cfg, int(group_size)
        self.settings = settings if settings is not None else NoverSettings.from_mapping()
        self.save_steps = save_steps  # train.save_steps: how often the proxy is updated
        self.prefix = response_prefix(model_cfg)
        self.__name__ = "nover"

    def _ids(self, text: str) -> list[int]:
        """tokenizer(text).input_ids with the tokenizer's special tokens, as the release calls it."""
        return list(self.tokenizer(text)["input_ids"])

    def ppl_inputs(self, question: str, reasoning: str, reference: str) -> tuple[list[int], list[int], int]:
        """(context ids, target ids, N_r) of the released perplexity for one completion."""
        context, target = ppl_texts(question, reasoning, reference)
        combined = self._ids(context + target)
        cut = len(self._ids(context))  # the target is what follows the context's own tokens
        return combined[:cut], combined[cut:], len(self._ids(reasoning))

    def gated(self, completion: str, row: Mapping[str, Any]) -> bool:
        """True when the answer gate withholds the rank and efficiency terms: answer_gate=match, the
        answer block misses every gold (protocol matcher); strict, strict accuracy v2 withdraws it."""
        gate = self.settings.answer_gate
        if gate == "none":
            return False
        golds = [str(a) for a in row.get("answers") or []]
        if gate == "strict":
            return not strict_correct(self.prefix + (completion or ""), golds, question=row.get("question")).correct
        answer = extract_answer(self.prefix + (completion or ""), think=False).answer
        return not match_closed_book(answer or "", golds)

    def _groups(self, rows: Sequence[Mapping[str, Any]]) -> list[range]:
        g, n = self.group_size, len(rows)
        if n % g:
            raise ValueError(f"nover: {n} completions in a reward call is not a multiple of the group size {g} "
                             f"(train.completions_per_question); the reward needs whole groups")
        groups = [range(s, s + g) for s in range(0, n, g)]
        for grp in groups:
            if len({repr(_row_key(rows[i])) for i in grp}) != 1:
                raise ValueError(f"nover: completions {grp.start}..{grp.stop - 1} do not share one pool row; "
                                 f"groups must be {g} consecutive completions of one question")
        return groups

    def __call__(self, *, prompts: Sequence[str] | None = None, completions: Sequence[str],
                 completion_ids: Sequence[Sequence[int]], rows: Sequence[Mapping[str, Any]], policy: Any = None,
                 **kwargs: Any) -> RewardOutput:
        if policy is None:
            raise HarnessError("method=nover scores a completion with the policy itself (teacher-forced "
                               "log-probabilities of the reference answer); it needs the trainer's policy handle, "
                               "which this caller (e.g. `harness probe`) does not pass")
        started = time.perf_counter()
        n = len(completions)
        if len(completion_ids) != n or len(rows) != n:
            raise ValueError(f"nover: {len(completion_ids)} completion_ids and {len(rows)} rows for {n} completions")
        groups = self._groups(rows)
        parsed = [parse_strict(self.prefix + text) for text in completions]
        gated = [p is not None and self.gated(text, row) for p, text, row in zip(parsed, completions, rows)]
        # Each distinct (context, target) is scored once per call: identical completions of a
        # group (common in GRPO, and the probe's shared fillers) share one teacher-forced pass.
        unique: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
        contexts, targets, where, lengths = [], [], [], [None] * n
        for b, p in enumerate(parsed):
            if p is None:
                continue
            row = rows[b]
            context, target, lengths[b] = self.ppl_inputs(str(row["question"]), p.reasoning.strip(), _primary(row))
            key = (tuple(context), tuple(target))
            if key not in unique:
                unique[key] = len(contexts)
                contexts.append(context)
                targets.append(target)
            where.append((b, unique[key]))
        forward_started = time.perf_counter()
        logprobs = (policy.target_logprobs(contexts, targets, adapter=self.settings.adapter,
                                           batch_size=self.settings.batch_size) if contexts else [])
        forward_seconds = time.perf_counter() - forward_started
        ppl: list[float | None] = [None] * n
        nll: list[float | None] = [None] * n
        for b, u in where:
            lp = logprobs[u]
            nll[b] = float(-lp.mean()) if lp.numel() else 0.0
            ppl[b] = reasoning_perplexity(nll[b], int(lengths[b]), self.settings.length_rule)
        totals, fmt, r_r, r_e = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
        for grp in groups:
            # Gated completions keep their place in the ranks (so the guard never changes another
            # completion's reward) and lose their rank and efficiency terms: w_format only.
            scores = score_group([parsed[i] is not None for i in grp], [ppl[i] for i in grp],
                                 [lengths[i] for i in grp], self.settings.weights, self.settings.rank_ties)
            for pos, i in enumerate(grp):
                totals[i], fmt[i] = scores.total[pos], scores.format[pos]
                r_r[i], r_e[i] = scores.reasoning[pos], scores.efficiency[pos]
                if gated[i]:
                    r_r[i] = r_e[i] = 0.0
                    totals[i] = self.settings.weights.format * fmt[i]
        returns = [[totals[b]] * len(completion_ids[b]) for b in range(n)]
        valid_ppl = [p for p in ppl if p is not None]
        diagnostics = {
            "format_rate": sum(fmt) / max(n, 1),
            "reasoning_ppl_mean": sum(valid_ppl) / len(valid_ppl) if valid_ppl else math.nan,
            "reasoning_tokens_mean": (sum(x for x in lengths if x is not None) / len(valid_ppl)
                                      if valid_ppl else math.nan),
            "reasoning_reward_mean": sum(r_r) / max(n, 1), "efficiency_reward_mean": sum(r_e) / max(n, 1),
            "forward_seconds": forward_seconds, "reward_seconds": time.perf_counter() - started,
            "scored": float(len(where)), "forward_sequences": float(len(contexts)),
            "gated_rate": sum(gated) / max(n, 1),
        }
        records = [{"completion": b, "question_id": rows[b].get("id"), "format": fmt[b], "gated": gated[b],
                    "reasoning_tokens": lengths[b],
                    "mean_nll": nll[b], "perplexity": ppl[b], "rank_reward": r_r[b], "efficiency_reward": r_e[b],
                    "reward": totals[b]} for b in range(n)]
        return RewardOutput(returns, diagnostics, records)


def _primary(row: Mapping[str, Any]) -> str:
    answers = list(row.get("answers") or [])
    if not answers:
        raise ValueError(f"nover: pool row {row.get('id')!r} has no reference answer")
    return str(answers[0])

"""Response-level rewards shared by every method (docs/PROTOCOL.md §3).

- correctness (the judge): +2 when the final answer matches the completion's *own* row's
  gold or an alias, -1 when it is wrong, refused or empty. "Matches" is the evaluator's
  definition (`factrl.harness.core.answers`: normalisation, alias handling, token-boundary
  containment), so training rewards exactly what evaluation scores. The released trainer
  judged every completion against the first question's gold and matched character
  substrings; neither is copied.
- format: +1 when the answer block is non-empty and closed, else -1. A refusal in a proper
  block is well formatted (the released rule punished the abstention the prompt asks for).
- length penalty (optional, off unless eta > 0): eta * max(0, L - L0) / L0, subtracted from
  the format term, L in completion tokens.

R_response = lambda_j * correctness + lambda_f * (format - length_penalty).

Every function follows the reward contract (the reward contract, docs/CONTRACTS.md): keyword-only arguments plus **kwargs,
one value per completion, and a stable name for metric keys.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .answers import extract_answer, is_refusal, match_closed_book, strict_correct
from .settings import Settings


FORMAT_RULES = ("paper", "single_block")
# protocol: the evaluator's matcher (containment on token boundaries, the last answer block);
# strict: strict accuracy's rule (harness/core/answers/strict.py: one answer block, the gold asserted, not
# negated, retracted or listed among other candidates). A guard (docs/CONTRACTS.md "Guards").
CORRECTNESS_RULES = ("protocol", "strict")


@dataclass(frozen=True)
class ResponseRewardSettings(Settings):
    """Weights and values of the response-level reward. The defaults are the paper's, in
    configs/method/corver.yaml ("response-level reward"), each with its quote."""

    OWNER = "method"
    DEFAULTS = "method/corver.yaml"
    RANGES = {"lambda_j": "[0, inf)", "lambda_f": "[0, inf)", "correct": "any", "wrong": "any", "format_ok": "any",
              "format_bad": "any", "length_eta": "[0, inf)", "length_l0": "[0, inf)"}

    lambda_j: float
    lambda_f: float
    correct: float  # correctness of a matched final answer
    wrong: float  # ... of an incorrect, refused or empty one
    format_ok: float
    format_bad: float
    length_eta: float  # eta of "- eta * max{0, L(y) - L0} / L0"; 0 = off
    length_l0: float  # L0, in completion tokens
    # paper: closed and non-empty; single_block: also exactly one <answer> tag (the
    # evaluator's format_ok, which closes the "repeat the answer block" loophole).
    format_rule: str
    correctness: str  # protocol (default, as the paper) | strict (the guard): CORRECTNESS_RULES

    def __post_init__(self) -> None:
        if self.format_rule not in FORMAT_RULES:
            raise ValueError(f"format_rule={self.format_rule!r}: choose one of {FORMAT_RULES}")
        if self.correctness not in CORRECTNESS_RULES:
            raise ValueError(f"correctness={self.correctness!r}: choose one of {', '.join(CORRECTNESS_RULES)}")
        if self.length_eta < 0:
            raise ValueError(f"length_eta={self.length_eta} must be >= 0 (0 switches the penalty off)")
        if self.length_eta > 0 and self.length_l0 <= 0:
            raise ValueError(f"length_l0={self.length_l0} must be > 0 when length_eta > 0")


@functools.lru_cache(maxsize=1)
def paper_settings() -> ResponseRewardSettings:
    """The YAML's values: what the reward functions below use for an argument left out."""
    return ResponseRewardSettings.from_mapping()


@dataclass
class ResponseRewards:
    """Per-completion results of one call; `total` is R_response."""

    total: list[float]
    correctness: list[float]
    format: list[float]
    length_penalty: list[float]
    correct: list[bool]
    refused: list[bool]
    empty: list[bool]
    format_ok: list[bool]
    seconds: float = 0.0
    extractions: list[Any] = field(default_factory=list, repr=False)

    def diagnostics(self) -> dict[str, float]:
        n = max(len(self.total), 1)
        return {
            "correct_rate": sum(self.correct) / n,
            "correctness_mean": sum(self.correctness) / n,
            "format_rate": sum(self.format_ok) / n,
            "refusal_rate": sum(self.refused) / n,
            "empty_rate": sum(self.empty) / n,
            "length_penalty_mean": sum(self.length_penalty) / n,
            "response_mean": sum(self.total) / n,
        }


def gold_answers(row: Mapping[str, Any]) -> list[str]:
    """The row's reference answers and aliases (`answers`: a list of strings)."""
    answers = row.get("answers")
    if answers is None:
        raise KeyError("pool row has no 'answers' list; rows are {question, answers, title}")
    if isinstance(answers, str):
        return [answers]
    return [str(a) for a in answers]


def judge(completion: str, answers: Sequence[str], rule: str = "protocol",
          question: str | None = None) -> tuple[bool, bool, bool, Any]:
    """(correct, refused, empty, extraction) of one completion against its own gold; `rule`
    (CORRECTNESS_RULES): the protocol's matcher, or strict accuracy's verdict on top of it (which
    reads the row's `question` from v7)."""
    ext = extract_answer(completion or "")
    empty = not ext.answer
    refused = (not empty) and is_refusal(ext.answer)
    correct = (not empty) and (not refused) and match_closed_book(ext.answer, tuple(answers))
    if correct and rule == "strict":
        correct = strict_correct(completion or "", tuple(answers), question=question).correct
    elif rule not in CORRECTNESS_RULES:
        raise ValueError(f"correctness rule {rule!r}: choose one of {', '.join(CORRECTNESS_RULES)}")
    return correct, refused, empty, ext


def correctness_reward(*, completions: Sequence[str], rows: Sequence[Mapping[str, Any]],
                       correct: float | None = None, wrong: float | None = None, **kwargs: Any) -> list[float]:
    """+correct when completion b matches rows[b]'s gold, else wrong (refused and empty too);
    values left out are the YAML's (`paper_settings`)."""
    _check_lengths(completions, rows)
    correct = paper_settings().correct if correct is None else correct
    wrong = paper_settings().wrong if wrong is None else wrong
    return [correct if judge(c, gold_answers(r))[0] else wrong for c, r in zip(completions, rows)]


def format_reward(*, completions: Sequence[str], ok: float | None = None, bad: float | None = None,
                  rule: str | None = None, **kwargs: Any) -> list[float]:
    """+ok for a non-empty closed answer block (rule `single_block`: and only one), else bad;
    values left out are the YAML's (`paper_settings`)."""
    paper = paper_settings()
    ok, bad = (paper.format_ok if ok is None else ok), (paper.format_bad if bad is None else bad)
    rule = paper.format_rule if rule is None else rule
    return [ok if _format_ok(extract_answer(c or ""), rule) else bad for c in completions]


def length_penalty(*, completion_ids: Sequence[Sequence[int]], eta: float | None = None, l0: float | None = None,
                   **kwargs: Any) -> list[float]:
    """eta * max(0, L - L0) / L0 per completion, L = number of completion tokens; 0 when eta = 0;
    values left out are the YAML's (`paper_settings`: off)."""
    eta = paper_settings().length_eta if eta is None else eta
    l0 = paper_settings().length_l0 if l0 is None else l0
    if eta <= 0:
        return [0.0] * len(completion_ids)
    return [eta * max(0.0, len(ids) - l0) / l0 for ids in completion_ids]


def response_rewards(*, completions: Sequence[str], rows: Sequence[Mapping[str, Any]],
                     completion_ids: Sequence[Sequence[int]] | None = None,
                     config: ResponseRewardSettings | None = None, **kwargs: Any) -> ResponseRewards:
    """R_response and its parts for B completions, each judged against its own row (config
    None: the YAML's settings)."""
    started = time.perf_counter()
    cfg = config if config is not None else paper_settings()
    _check_lengths(completions, rows)
    if completion_ids is not None and len(completion_ids) != len(completions):
        raise ValueError(f"{len(completion_ids)} completion_ids for {len(completions)} completions")
    if cfg.length_eta > 0 and completion_ids is None:
        raise ValueError("the length penalty needs completion_ids (L is counted in tokens)")
    lengths = length_penalty(completion_ids=completion_ids or [[]] * len(completions),
                             eta=cfg.length_eta, l0=cfg.length_l0)
    out = ResponseRewards([], [], [], lengths, [], [], [], [])
    for completion, row, pen in zip(completions, rows, lengths):
        correct, refused, empty, ext = judge(completion, gold_answers(row), cfg.correctness, row.get("question"))
        fmt_ok = _format_ok(ext, cfg.format_rule)
        c_val = cfg.correct if correct else cfg.wrong
        f_val = cfg.format_ok if fmt_ok else cfg.format_bad
        out.correctness.append(c_val)
        out.format.append(f_val)
        out.total.append(cfg.lambda_j * c_val + cfg.lambda_f * (f_val - pen))
        out.correct.append(correct)
        out.refused.append(refused)
        out.empty.append(empty)
        out.format_ok.append(fmt_ok)
        out.extractions.append(ext)
    out.seconds = time.perf_counter() - started
    return out


def _format_ok(ext: Any, rule: str) -> bool:
    if rule == "single_block":
        return bool(ext.format_ok)
    return bool(ext.closed and ext.answer)


def _check_lengths(completions: Sequence[Any], rows: Sequence[Any]) -> None:
    if len(completions) != len(rows):
        raise ValueError(f"{len(completions)} completions but {len(rows)} rows: completion b is judged "
                         f"against rows[b], so pass one row per completion (already repeated per group)")


__all__ = ["CORRECTNESS_RULES", "FORMAT_RULES", "ResponseRewardSettings", "ResponseRewards", "correctness_reward", "format_reward",
           "gold_answers", "judge", "length_penalty", "paper_settings", "response_rewards"]

"""The TruthRL reward callable: one ternary value per completion, on every token of it.

A completion (the model's response prefix, e.g. "<think>", put back in front) is read with the
protocol's answer rule: the last closed `<answer>` block (harness.core.answers.extract_answer; the
release reads the first `\\boxed{...}` its own prompt asks for, README "Fidelity"). Then, per
completion, scoring.py's order: no closed answer block -> wrong; an abstention -> abstain; "invalid
question" -> wrong; an exact match with a gold -> correct; otherwise the verifier decides:
`verifier: judge` asks the judge client once per (completion, gold) pair, all pairs of a step in
one `ask_many` (the release asks gold by gold until one is accepted); `exact` is the release's
rule-based variant (compute_score_llm_as_a_judge_ternary_EM: no judge, so anything else is
wrong); `matcher` is the protocol's matcher. Values: `correct` +1, `abstain` 0, `wrong` -1.

No signal (None, reason `judge_failed`) for a completion the judge accepted for no gold while one
of its items failed: the failure rule (docs/CONTRACTS.md "Reward failure rule"); more than
judge.max_failed_share failed items in a step stop the run (resumably).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core.answers import GAMING_REASONS, extract_answer, match_closed_book, strict_correct
from factrl.harness.core.method import RewardOutput
from factrl.harness.core.settings import Settings

from . import scoring
from .prompts import GRADE

# `method.*` of method=truthrl: the plugin's one place for its defaults (it ships no configs/method/ file).
TRUTHRL_DEFAULTS = {
    "correct": 1.0,   # the ternary reward: correct +1, abstain 0, wrong -1 (the paper's abstract; truthrl_qa.py:699-742)
    "abstain": 0.0,   # abstain = wrong (-1) is the release's binary baseline (compute_score_llm_as_a_judge_binary)
    "wrong": -1.0,
    "verifier": "judge",        # judge (the release) | exact (the release's rule-based variant) | matcher (the protocol's)
    "abstention": "released",   # released: the answer contains "i dont know" | protocol: it is an abstention form
    # A guard (docs/CONTRACTS.md "Guards"; none = TruthRL's reward): strict = an answer strict accuracy
    # withdraws for gaming (harness.core.answers.GAMING_REASONS: several blocks, a negated, retracted, listed or
    # embedded gold, a fragment of one) is wrong, no judge call.
    "answer_guard": "none",
}
VERIFIERS = ("judge", "exact", "matcher")
ANSWER_GUARDS = ("none", "strict")
DIAGNOSTIC_KEYS = ("correct_rate", "abstain_rate", "wrong_rate", "no_answer_rate", "exact_rate", "guarded_rate",
                   "judge_items", "judge_failed", "no_signal_judge", "reward_mean", "judge_seconds")


@dataclass(frozen=True)
class TruthRLSettings(Settings):
    """`method.*` of method=truthrl (TRUTHRL_DEFAULTS documents each key)."""

    OWNER = "method"
    DEFAULTS = TRUTHRL_DEFAULTS
    RANGES = {"correct": "any", "abstain": "any", "wrong": "any"}  # only their order is required (__post_init__)
    IGNORE = ("name",)

    correct: float
    abstain: float
    wrong: float
    verifier: str
    abstention: str
    answer_guard: str

    def __post_init__(self) -> None:
        if self.verifier not in VERIFIERS:
            raise ValueError(f"verifier={self.verifier!r}: choose one of {VERIFIERS}")
        if self.abstention not in scoring.ABSTENTION_RULES:
            raise ValueError(f"abstention={self.abstention!r}: choose one of {scoring.ABSTENTION_RULES}")
        if self.answer_guard not in ANSWER_GUARDS:
            raise ValueError(f"answer_guard={self.answer_guard!r}: choose one of {ANSWER_GUARDS}")
        if not self.wrong <= self.abstain <= self.correct:
            raise ValueError(f"wrong={self.wrong}, abstain={self.abstain}, correct={self.correct}: the ternary reward "
                             f"needs wrong <= abstain <= correct")

    @property
    def guards(self) -> list[str]:
        out = [f"answer_guard={self.answer_guard}"] if self.answer_guard != "none" else []
        return out + (["abstention=protocol"] if self.abstention == "protocol" else [])


def golds_of(row: Mapping[str, Any]) -> list[str]:
    answers = row.get("answers") or []
    return [answers] if isinstance(answers, str) else [str(a) for a in answers if str(a).strip()]


@dataclass
class _Item:
    index: int
    row: Mapping[str, Any]
    answer: str | None
    decision: str
    guarded: str | None = None
    judged: bool | None = None
    verdict: str | None = None
    value: float | None = None
    error: str | None = None


class TruthRLReward:
    """reward(*, completions, completion_ids, rows, **kwargs) -> RewardOutput."""

    name = "truthrl"

    def __init__(self, *, settings: TruthRLSettings | None = None, judge: Any = None, prefix: str = ""):
        self.settings = settings if settings is not None else TruthRLSettings.from_mapping()
        if self.settings.verifier == "judge" and judge is None:
            raise ValueError("truthrl: verifier=judge needs a judge (the harness's judge client)")
        self.judge, self.prefix, self.prompt = judge, str(prefix or ""), GRADE
        self.__name__ = "truthrl"

    def read(self, index: int, text: str, row: Mapping[str, Any]) -> _Item:
        """The answer and the decision before any judge call."""
        turn = self.prefix + (text or "")
        extraction = extract_answer(turn, think=False)
        answer = extraction.answer if extraction.closed else None
        golds = golds_of(row)
        if answer is not None and self.settings.answer_guard == "strict":
            reason = strict_correct(turn, tuple(golds), question=row.get("question")).reason
            if reason in GAMING_REASONS:
                return _Item(index, row, answer, scoring.GUARDED, guarded=reason)
        return _Item(index, row, answer, scoring.first_decision(answer, golds, abstention=self.settings.abstention))

    def _verify(self, items: list[_Item]) -> list[Any]:
        asked = [i for i in items if i.decision == scoring.ASK]
        if self.settings.verifier == "exact":
            for item in asked:
                item.judged = False  # the release's rule-based variant: only an exact match is correct
            return []
        if self.settings.verifier == "matcher":
            for item in asked:
                item.judged = match_closed_book(item.answer or "", golds_of(item.row))
            return []
        pairs = [(item, gold) for item in asked for gold in golds_of(item.row)]
        if not pairs:
            for item in asked:
                item.judged = False
            return []
        results = self.judge.ask_many(self.prompt, [
            {"question": str(item.row.get("question", "")), "gold": gold, "prediction": item.answer}
            for item, gold in pairs])
        by_item: dict[int, list[Any]] = {}
        for (item, _), result in zip(pairs, results):
            by_item.setdefault(item.index, []).append(result)
        for item in asked:
            got = by_item.get(item.index, [])
            item.judged = scoring.judged_correct([r.value for r in got], [bool(r.ok) for r in got])
            if item.judged is None:
                item.error = "; ".join(str(r.error) for r in got if not r.ok)
        return results

    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        if not (len(completions) == len(completion_ids) == len(rows)):
            raise ValueError(f"truthrl: {len(completions)} completions, {len(completion_ids)} completion_ids and "
                             f"{len(rows)} rows: give one row per completion")
        s = self.settings
        items = [self.read(b, text, row) for b, (text, row) in enumerate(zip(completions, rows))]
        started = time.perf_counter()
        results = self._verify(items)
        judge_seconds = time.perf_counter() - started
        if results:  # above judge.max_failed_share the run stops here, with the counts (resumable)
            self.judge.check_failed_share(results, where="one TruthRL reward step (answer grades)")
        returns: list[list[float] | None] = []
        for item, ids in zip(items, completion_ids):
            item.verdict = scoring.verdict(item.decision, item.judged)
            item.value = scoring.reward_of(item.verdict, correct=s.correct, abstain=s.abstain, wrong=s.wrong)
            returns.append(None if item.value is None else [item.value] * len(ids))
        reasons = [None if r is not None else "judge_failed" for r in returns]
        return RewardOutput(returns, self._diagnostics(items, results, judge_seconds),
                            [_record(i) for i in items], no_signal_reasons=reasons)

    def _diagnostics(self, items: list[_Item], results: list[Any], seconds: float) -> dict[str, float]:
        n = max(len(items), 1)
        values = [i.value for i in items if i.value is not None]
        out = {
            "correct_rate": sum(i.verdict == scoring.CORRECT for i in items) / n,
            "abstain_rate": sum(i.verdict == scoring.ABSTAINED for i in items) / n,
            "wrong_rate": sum(i.verdict == scoring.WRONG for i in items) / n,
            "no_answer_rate": sum(i.decision == scoring.NO_ANSWER for i in items) / n,
            "exact_rate": sum(i.decision == scoring.EXACT for i in items) / n,
            "guarded_rate": sum(i.decision == scoring.GUARDED for i in items) / n,
            "judge_items": float(len(results)),
            "judge_failed": float(sum(not r.ok for r in results)),
            "no_signal_judge": sum(i.value is None for i in items) / n,
            "reward_mean": sum(values) / len(values) if values else 0.0,
            "judge_seconds": seconds,
        }
        assert tuple(out) == DIAGNOSTIC_KEYS
        return {k: float(v) for k, v in out.items()}


def _record(item: _Item) -> dict[str, Any]:
    """One line of train/reward_records.jsonl per completion."""
    return {"completion": item.index, "row_id": item.row.get("id"), "answer": item.answer, "decision": item.decision,
            "guarded": item.guarded, "judged": item.judged, "verdict": item.verdict, "reward": item.value,
            "error": item.error}


__all__ = ["ANSWER_GUARDS", "DIAGNOSTIC_KEYS", "TRUTHRL_DEFAULTS", "TruthRLReward", "TruthRLSettings", "VERIFIERS",
           "golds_of"]

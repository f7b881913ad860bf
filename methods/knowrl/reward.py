"""KnowRL's reward over one generation batch: judge grades, atomic facts, evidence, NLI.

The services arrive as arguments (the method wires the real ones; tests pass real tiny ones):
- `judge`: `ask_many(prompt, items) -> [JudgeResult(value, ok, error, ...)]` (the judge client);
- `store`: an evidence store (`for_row(row, query, k)`, `by_title(titles, k)`);
- `nli`: an NLI scorer (`score([(premise, hypothesis), ...]) -> [probability]`).

Calls per step, whatever the batch size: one `ask_many` with every answer to grade, one with
the reasoning of every completion that takes the fact term, one `nli.score` over every
(passage, fact) pair. KnowRL ran its judge calls one at a time (docs/BASELINES.md §9).

No signal (`None`, the reward contract) for a completion whose grade or fact split failed at
the judge: it is counted under `judge_failed`, never scored 0 as the released code did. When
more than `judge.max_failed_share` of a step's judge items fail, the judge's
`check_failed_share` stops the step with the counts (`JudgeFailuresExceeded`); the run stops
and a rerun resumes from its last checkpoint (nothing failed was cached).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from factrl.harness.core.answers import GAMING_REASONS, match_closed_book, strict_correct
from factrl.harness.core.method import RewardOutput

from . import scoring
from .prompts import prompts_for
from .scoring import KnowRLSettings

# Every key is logged at every step (stable metric names, docs/CONTRACTS.md); README lists them.
DIAGNOSTIC_KEYS = (
    "correct_rate", "refusal_rate", "incorrect_rate", "no_answer_rate", "skipped_judge_rate", "grade_overruled",
    "format_rate",
    "judge_items", "judge_failed", "grade_failed", "facts_failed", "parse_failures", "no_signal_judge",
    "fact_term_rate", "no_evidence", "facts_per_completion", "supported_share", "fact_score_mean",
    "length_penalty_mean", "nli_pairs", "reward_mean", "judge_seconds", "retrieval_seconds", "nli_seconds",
)


@dataclass
class _Item:
    """One completion on its way through the steps."""

    index: int
    row: Mapping[str, Any]
    format_value: float
    answer: str
    reasoning: str
    grade: str | None = None
    guarded: str | None = None  # answer_guard=strict: the strict accuracy reason that graded it incorrect
    overruled: bool = False  # grade_check=matcher: the judge's CORRECT, which the protocol's matcher does not share
    correctness: float | None = None
    refused: bool = False
    skipped_judge: bool = False
    fact_term: bool = False
    evidence: bool = True
    facts: list[str] | None = None
    supported: list[bool] = field(default_factory=list)
    fact: float | None = None
    penalty: float | None = None
    total: float | None = None  # None: no signal
    error: str | None = None
    turn: str = ""  # the whole assistant turn (the strict guard reads every answer block)


def _usable(result: Any, *, grade: bool) -> bool:
    if not result.ok:
        return False
    return scoring.parse_grade(result.value) is not None if grade else isinstance(result.value, (list, tuple))


def _unreadable(result: Any) -> bool:
    """A failure of reading the judge's replies (the judge client's "unreadable reply after
    N answer(s)"), as opposed to not reaching the judge at all."""
    return "unreadable" in str(result.error or "").lower()


class KnowRLReward:
    """The reward callable (the reward contract, docs/CONTRACTS.md): format + final, broadcast to every completion token."""

    name = "knowrl"

    def __init__(self, *, judge: Any, store: Any, nli: Any, k: int, settings: KnowRLSettings | None = None,
                 grade_prompt: Any = None, facts_prompt: Any = None, prefix: str = ""):
        self.judge, self.store, self.nli = judge, store, nli
        self.settings = settings if settings is not None else KnowRLSettings.from_mapping()
        own_grade, own_facts = prompts_for(self.settings.grade_parse)
        self.k = int(k)  # the evidence group's `k`
        self.grade_prompt, self.facts_prompt = grade_prompt or own_grade, facts_prompt or own_facts
        # model.response_prefix: the start of the assistant turn the prompt already wrote ("<think>"
        # for the embedded SmolLM2); the format and fact-text rules see the whole turn.
        self.prefix = str(prefix or "")
        self._has_evidence: dict[str, bool] = {}

    # -- the steps ------------------------------------------------------------------------
    def _grade(self, items: list[_Item]) -> list[Any]:
        """Correctness of every item: -1 without a call for a missing answer (and v1.0.0's
        pre-checks), else the judge's grade. Returns the judge's results."""
        v1 = self.settings.variant == "v1.0.0"
        asked: list[_Item] = []
        for item in items:
            if not item.answer:
                item.correctness, item.skipped_judge = self.settings.incorrect, True
            elif (reason := self._gaming(item)) is not None:
                item.correctness, item.skipped_judge, item.guarded = self.settings.incorrect, True, reason
            elif v1 and scoring.is_refusal(item.answer):
                item.correctness, item.refused, item.skipped_judge = self.settings.incorrect, True, True
            elif v1 and scoring.v1_skips_judge(item.answer, _golds(item.row)):
                item.correctness, item.skipped_judge = self.settings.incorrect, True
            else:
                asked.append(item)
        if not asked:
            return []
        results = self.judge.ask_many(self.grade_prompt, [
            # The raw question (the release's `qwestion` column never reaches the reward, so its
            # judge saw the chat-templated prompt) and one reference, the first, as the release's
            # `best_answer` (README, Fidelity).
            {"question": str(i.row.get("question", "")), "gold": shown_gold(i.row), "answer": i.answer} for i in asked])
        for item, result in zip(asked, results):
            grade = scoring.parse_grade(result.value) if result.ok else None
            if grade is None:
                item.error = f"grade: {result.error or f'unreadable value {result.value!r}'}"
                continue
            if grade == "A" and self.settings.grade_check == "matcher" and not match_closed_book(item.answer,
                                                                                             _golds(item.row)):
                grade, item.overruled = "B", True  # the judge's CORRECT, not the matcher's: INCORRECT
            item.grade = grade
            item.refused = grade == "C"
            item.correctness = scoring.grade_reward(grade, self.settings)
        return results

    def _gaming(self, item: _Item) -> str | None:
        """answer_guard=strict: strict accuracy's reason when it withdraws the answer for gaming."""
        if self.settings.answer_guard != "strict":
            return None
        verdict = strict_correct(item.turn, tuple(_golds(item.row)), question=item.row.get("question"))
        return verdict.reason if verdict.reason in GAMING_REASONS else None

    def _row_has_evidence(self, row: Mapping[str, Any]) -> bool:
        title = str(row.get("title") or "")
        if title not in self._has_evidence:
            self._has_evidence[title] = bool(title.strip()) and bool(self.store.by_title(title, k=1))
        return self._has_evidence[title]

    def _split_facts(self, items: list[_Item]) -> list[Any]:
        """Atomic facts of the reasoning of every fact-term item with evidence, in one call."""
        asked: list[tuple[_Item, str]] = []
        for item in items:
            item.fact_term = item.correctness is not None and scoring.gets_fact_term(
                item.correctness, item.refused, self.settings)
            if not item.fact_term:
                continue
            item.evidence = self._row_has_evidence(item.row)
            text = item.reasoning
            if not item.evidence or not text:
                # No passages (or nothing to split): every fact would be unsupported, so the
                # fact term is 0 whatever the facts are; no judge call is spent on it.
                item.facts = []
                continue
            asked.append((item, text))
        if not asked:
            return []
        results = self.judge.ask_many(self.facts_prompt, [{"text": text} for _, text in asked])
        for (item, _), result in zip(asked, results):
            if not result.ok or not isinstance(result.value, (list, tuple)):
                item.error = f"facts: {result.error or f'unreadable value {result.value!r}'}"
                continue
            item.facts = [str(f) for f in result.value]
        return results

    def _check_facts(self, items: list[_Item]) -> tuple[float, float, int]:
        """Top-k passages per fact (BM25 over the row's articles, query "topic fact"), then one
        NLI call over all (passage, fact) pairs. Returns (retrieval s, nli s, pairs)."""
        started = time.perf_counter()
        pairs: list[tuple[str, str]] = []
        owners: list[tuple[_Item, int]] = []
        for item in items:
            if not item.fact_term or not item.facts:
                continue
            topic = str(item.row.get("title") or "").replace(";", " ")  # FActScore: "topic + fact"
            for j, fact in enumerate(item.facts):
                for passage in self.store.for_row(dict(item.row), f"{topic} {fact}", self.k):
                    pairs.append((passage.text, fact))
                    owners.append((item, j))
        retrieval = time.perf_counter() - started
        started = time.perf_counter()
        scores = self.nli.score(pairs) if pairs else []
        nli_seconds = time.perf_counter() - started
        per_fact: dict[tuple[int, int], list[float]] = {}
        for (item, j), value in zip(owners, scores):
            per_fact.setdefault((item.index, j), []).append(float(value))
        for item in items:
            if item.fact_term and item.facts is not None:
                item.supported = scoring.supported_flags(
                    [per_fact.get((item.index, j), []) for j in range(len(item.facts))], self.settings.threshold)
                item.fact = scoring.fact_score(item.supported, self.settings)
                item.penalty = scoring.length_penalty(len(item.facts), self.settings.gamma)
        return retrieval, nli_seconds, len(pairs)

    # -- the call -------------------------------------------------------------------------
    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        if not (len(completions) == len(completion_ids) == len(rows)):
            raise ValueError(f"{len(completions)} completions, {len(completion_ids)} completion_ids and "
                             f"{len(rows)} rows: give one row per completion (already repeated per group)")
        s = self.settings
        items: list[_Item] = []
        for b, (text, row) in enumerate(zip(completions, rows)):
            turn = self.prefix + (text or "")
            items.append(_Item(b, row, s.format_ok if scoring.format_ok(turn) else s.format_bad,
                               scoring.answer_of(turn), scoring.reasoning_of(turn), turn=turn))
        started = time.perf_counter()
        grades = self._grade(items)
        facts = self._split_facts(items)
        judge_seconds = time.perf_counter() - started
        # Above judge.max_failed_share the run stops here, with the counts (resumable).
        self.judge.check_failed_share([*grades, *facts], where="one KnowRL reward step (grades and fact splits)")
        retrieval, nli_seconds, n_pairs = self._check_facts(items)

        returns: list[list[float] | None] = []
        totals: list[float] = []
        for item, ids in zip(items, completion_ids):
            signal = item.correctness is not None and not (item.fact_term and item.fact is None)
            if not signal:
                returns.append(None)
                continue
            item.total = scoring.total(item.format_value, item.correctness, item.fact if item.fact_term else None)
            totals.append(item.total)
            returns.append([item.total] * len(ids))
        diagnostics = self._diagnostics(items, totals, grades, facts, pairs=n_pairs,
                                        seconds=(judge_seconds, retrieval, nli_seconds))
        # Why a completion has no signal: a failed judge item (the failure rule), else an unscored fact term.
        reasons = [None if r is not None else ("judge_failed" if item.error is not None else "unscored")
                   for item, r in zip(items, returns)]
        return RewardOutput(returns, diagnostics, [_record(item) for item in items], no_signal_reasons=reasons)

    def _diagnostics(self, items: list[_Item], totals: list[float], grades: list[Any], facts: list[Any], *,
                     pairs: int, seconds: tuple[float, float, float]) -> dict[str, float]:
        n = max(len(items), 1)
        failed_g = sum(not _usable(r, grade=True) for r in grades)
        failed_f = sum(not _usable(r, grade=False) for r in facts)
        parse = sum(_unreadable(r) for r in [*grades, *facts] if not r.ok)
        term = [i for i in items if i.fact_term]
        split = [i for i in term if i.facts]
        scored = [i for i in term if i.fact is not None]
        n_facts = sum(len(i.facts) for i in split)
        out = {
            "correct_rate": sum(i.grade == "A" for i in items) / n,
            "refusal_rate": sum(i.refused for i in items) / n,
            "incorrect_rate": sum(i.grade == "B" for i in items) / n,
            "no_answer_rate": sum(not i.answer for i in items) / n,
            "skipped_judge_rate": sum(i.skipped_judge for i in items) / n,
            "grade_overruled": float(sum(i.overruled for i in items)),
            "format_rate": sum(i.format_value == self.settings.format_ok for i in items) / n,
            "judge_items": float(len(grades) + len(facts)), "judge_failed": float(failed_g + failed_f),
            "grade_failed": float(failed_g),
            "facts_failed": float(failed_f), "parse_failures": float(parse),
            "no_signal_judge": sum(i.error is not None for i in items) / n,
            "fact_term_rate": len(term) / n,
            "no_evidence": float(sum(not i.evidence for i in term)),
            "facts_per_completion": n_facts / len(split) if split else 0.0,
            "supported_share": sum(sum(i.supported) for i in split) / n_facts if n_facts else 0.0,
            "fact_score_mean": sum(i.fact for i in scored) / len(scored) if scored else 0.0,
            "length_penalty_mean": sum(i.penalty for i in split) / len(split) if split else 0.0,
            "nli_pairs": float(pairs),
            "reward_mean": sum(totals) / len(totals) if totals else 0.0,
            "judge_seconds": seconds[0], "retrieval_seconds": seconds[1], "nli_seconds": seconds[2],
        }
        assert tuple(out) == DIAGNOSTIC_KEYS
        return {k: float(v) for k, v in out.items()}


def _golds(row: Mapping[str, Any]) -> list[str]:
    answers = row.get("answers") or []
    return [answers] if isinstance(answers, str) else [str(a) for a in answers]


def shown_gold(row: Mapping[str, Any]) -> str:
    """The one reference the judge sees: the row's first non-empty answer ("" when none: the
    prompt then says "No reference answer provided.", as released)."""
    return next((g.strip() for g in _golds(row) if g.strip()), "")


def _record(item: _Item) -> dict[str, Any]:
    """One line of train/reward_records.jsonl per completion."""
    return {"completion": item.index, "row_id": item.row.get("id"), "answer": item.answer, "grade": item.grade,
            "correctness": item.correctness, "refused": item.refused, "format": item.format_value,
            "fact_term": item.fact_term, "evidence": item.evidence if item.fact_term else None,
            "guarded": item.guarded, "overruled": item.overruled, "facts": item.facts, "supported": item.supported or None, "fact": item.fact, "penalty": item.penalty,
            "total": item.total, "error": item.error}


__all__ = ["DIAGNOSTIC_KEYS", "KnowRLReward", "shown_gold"]

"""`goldsent`: a sentence-level reward, the worked example of docs/ADDING_A_METHOD.md.

Every token earns the shared response-level reward (correctness and format); every token of a
sentence that states one of the row's gold answers earns `weight` more. A toy for the guide.
"""
from __future__ import annotations

from dataclasses import dataclass

from factrl.harness.core.completions import SPLITTERS, align, token_returns
from factrl.harness.core.method import Method, RewardOutput
from factrl.harness.core.rewards import gold_answers, response_rewards
from factrl.harness.core.settings import Settings


@dataclass(frozen=True)
class GoldSentenceSettings(Settings):
    OWNER = "method"
    DEFAULTS = {"weight": 0.5, "alignment_threshold": 0.5, "splitter": "reference"}
    IGNORE = ("name",)
    RANGES = {"weight": "[0, inf)", "alignment_threshold": "[0, 1]"}

    weight: float               # the sentence rewards' weight; 0: plain response-level GRPO
    alignment_threshold: float  # under this share of aligned tokens: the response reward only
    splitter: str               # one of factrl.harness.core.completions.SPLITTERS

    def __post_init__(self) -> None:
        if self.splitter not in SPLITTERS:
            raise ValueError(f"splitter={self.splitter!r}: choose one of {', '.join(SPLITTERS)}")


def sentence_scores(sentences, golds) -> list[float]:
    """1.0 for a sentence that contains a gold answer (case-insensitive), else 0.0."""
    golds = [g.lower() for g in golds if g.strip()]
    return [1.0 if any(g in s.text.lower() for g in golds) else 0.0 for s in sentences]


class GoldSentence(Method):
    name = "goldsent"
    label = "GoldSentence"
    algorithm = "grpo"
    description = "toy: response reward plus a bonus on each sentence that states a gold answer"
    settings_class = GoldSentenceSettings

    def build_reward(self, ctx):
        s, tokenizer = self.settings, ctx.tokenizer

        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            response = response_rewards(completions=completions, rows=rows, completion_ids=completion_ids)
            returns, records, aligned = [], [], 0
            for b, (ids, row) in enumerate(zip(completion_ids, rows)):
                base = response.total[b]  # R_response of completion b
                alignment = align(tokenizer, ids, splitter=s.splitter) if len(ids) else None
                if alignment is None or not alignment.usable(s.alignment_threshold):
                    returns.append([base] * len(ids))
                    continue
                aligned += 1
                scores = sentence_scores(alignment.sentences, gold_answers(row))
                returns.append(token_returns(alignment.sigma, base, scores, s.weight))
                records += [{"completion": b, "sentence": x.index, "section": x.section, "text": x.text,
                             "score": score} for x, score in zip(alignment.sentences, scores)]
            n = max(len(completions), 1)
            diagnostics = {**response.diagnostics(), "aligned_rate": aligned / n,
                           "gold_sentences_mean": sum(r["score"] for r in records) / n}
            return RewardOutput(returns, diagnostics=diagnostics, records=records)

        return reward

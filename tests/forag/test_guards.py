"""FoRAG's named guards (docs/CONTRACTS.md "Guards"): `dedupe_statements` and
`max_rewarded_statements`. Off, the design pays for every supported sub-claim, so repeating the
row's own evidence article 40 times around a wrong answer pays far more than the honest correct
answer; on, it pays no more. A guard never raises any completion's return."""
from __future__ import annotations

import pytest

from factrl.harness.core.completions import split_sentences
from factrl.harness.probe import panel
from factrl.methods.forag import FoRAGReward, FoRAGSettings
from factrl.methods.forag.guards import mark, normalised
from tests.knowrl.judge_server import JudgeServer

from .careful_judge import careful
from .conftest import ARTICLES, ROWS, judge_cfg
from .test_reward import encode

REPEATS = 40


def test_normalised_keys():
    assert normalised("Marie Curie was born in Warsaw.") == normalised(" marie curie  was born in WARSAW ")
    assert normalised("Marie Curie was born in Warsaw.") != normalised("Marie Curie was born in Paris.")
    assert normalised("Ｕｌｍ, 1879") == normalised("ulm 1879")  # NFKC, punctuation


def test_marks():
    claims = ["A is B.", "C is D.", "a is b", "E is F."]
    assert mark(claims, dedupe=False, max_rewarded=None) == [(False, True), (False, True), (True, True), (False, True)]
    assert mark(claims, dedupe=True, max_rewarded=None) == [(False, True), (False, True), (True, False), (False, True)]
    # the repeat is not counted among the first N when deduplicating
    assert mark(claims, dedupe=True, max_rewarded=2) == [(False, True), (False, True), (True, False), (False, False)]
    assert mark(claims, dedupe=False, max_rewarded=2) == [(False, True), (False, True), (True, False), (False, False)]
    assert mark(claims, dedupe=False, max_rewarded=0) == [(False, False), (False, False), (True, False), (False, False)]


class _Careful(JudgeServer):
    """The careful grader (careful_judge.py) over the prompt as sent."""

    request_queue_size = 64

    def reply_to(self, body: dict) -> str:
        from tests.knowrl.judge_server import raw_text

        return careful(raw_text(body))


def completions() -> dict[str, str]:
    """The honest pair and the article repeated REPEATS times before the honest wrong answer."""
    q = panel.questions([ROWS["curie"], ROWS["einstein"]])[0]
    entries = {e.name: e for e in panel.entries()}
    article = ARTICLES[0]["text"]
    sentences = [article[a:b] for a, b in split_sentences(article)]
    assert len(sentences) == 3 and q.wrong == "Ulm"
    repeated = " ".join(sentences * REPEATS)
    return {name: panel.completion_text(*entries[name].build(q)) for name in (panel.HONEST_CORRECT, panel.HONEST_WRONG)} | {
        "repeated_article": panel.completion_text(f"{repeated} I recall that the answer is {q.wrong}.", q.wrong)}


def returns(tokenizer, judge, store, **guards) -> dict[str, float]:
    texts = completions()
    reward = FoRAGReward(tokenizer=tokenizer, judge=judge, store=store, k=5,
                         settings=FoRAGSettings.from_mapping(**guards))
    out = reward(completions=list(texts.values()), completion_ids=encode(tokenizer, list(texts.values())),
                 rows=[ROWS["curie"]] * len(texts))
    assert None not in out.token_returns and out.diagnostics["judge_failed"] == 0.0
    return {name: sum(r) for name, r in zip(texts, out.token_returns)} | {
        "_clipped": out.diagnostics["guard_clipped"], "_duplicates": out.diagnostics["duplicate_subclaims"]}


@pytest.fixture(scope="module")
def careful_server():
    with _Careful() as server:
        yield server


@pytest.fixture()
def careful_judge(careful_server):
    from factrl.harness.services.judge import open_judge

    with open_judge(judge_cfg(careful_server.url, cache=None)) as judge:
        yield judge


def test_repeating_the_evidence_pays_only_without_the_guards(careful_judge, store, tokenizer):
    off = returns(tokenizer, careful_judge, store)
    # the design as it stands: every sentence of the article is supported, 40 times over
    assert (off[panel.HONEST_CORRECT], off[panel.HONEST_WRONG]) == (2.0, -2.0)
    assert off["repeated_article"] == 3 * REPEATS - 2.0  # 118: 30x the honest gap of 4
    # 117 repeats of the article, and each of the three answers restates its thought
    assert off["_clipped"] == 0.0 and off["_duplicates"] == 3 * (REPEATS - 1) + 3

    dedupe = returns(tokenizer, careful_judge, store, dedupe_statements=True)
    assert dedupe[panel.HONEST_CORRECT] == 1.0  # its answer restates the thought: paid once
    assert dedupe["repeated_article"] == 3 - 2.0  # each distinct sub-claim once
    assert dedupe["repeated_article"] <= dedupe[panel.HONEST_CORRECT]

    both = returns(tokenizer, careful_judge, store, dedupe_statements=True, max_rewarded_statements=2)
    assert both["repeated_article"] == 2 - 2.0 < both[panel.HONEST_CORRECT] == 1.0
    assert both[panel.HONEST_WRONG] == -2.0  # penalties always count

    for guarded in (dedupe, both, returns(tokenizer, careful_judge, store, max_rewarded_statements=1)):
        for name in completions():  # a guard never raises a return
            assert guarded[name] <= off[name]

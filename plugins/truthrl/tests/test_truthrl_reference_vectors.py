"""TruthRL against its release's recorded outputs (tests/reference_vectors/truthrl/, computed from
facebookresearch/TruthRL's truthrl_qa.py as copied in muyupan/TruthRL@1424295) and against the
paper's stated reward (paper_equations.json, labelled as such): the normalisation, the judge-reply
parser, the ternary reward with its judge turns, and where the harness differs on purpose."""
from __future__ import annotations

import re

import pytest

truthrl = pytest.importorskip("factrl_truthrl", reason="factrl-truthrl is not installed: run `pip install -e "
                                                        "plugins/truthrl` (make setup does)")
from factrl.harness.services.judge import ParseError, find_material, open_judge  # noqa: E402
from factrl_truthrl import scoring  # noqa: E402
from factrl_truthrl.prompts import SYSTEM, parse_score  # noqa: E402
from factrl_truthrl.reward import TruthRLReward, TruthRLSettings  # noqa: E402
from tests import refvec  # noqa: E402
from tests.knowrl.judge_server import JudgeServer  # noqa: E402

TERNARY = refvec.cases("truthrl", "ternary_reward")
# Where the harness differs from the release on purpose (README, Fidelity): a judge item that
# fails or cannot be read is no signal, not -1; the release reads the first \boxed{}, the
# protocol the last answer block.
NO_SIGNAL = {"judge_fails", "judge_unparsable", "judge_bad_score"}
FIRST_BOX = {"first_box_read"}


def as_completion(solution: str) -> str:
    """The release's response in the harness's format: each \\boxed{X} becomes <answer>X</answer>."""
    return re.sub(r"\\boxed\{(.*?)\}", r"<answer>\1</answer>", solution)


@pytest.mark.parametrize("case", refvec.load("truthrl", "normalize_answer")["cases"], ids=lambda c: c["name"])
def test_normalisation_is_the_releases(case):
    assert scoring.release_normalize(case["input"]) == case["output"]


@pytest.mark.parametrize("case", refvec.load("truthrl", "parse_response")["cases"], ids=lambda c: c["name"])
def test_judge_replies_read_as_released_and_unreadable_ones_fail(case):
    if case["output"] in (0, 1):
        assert parse_score(case["input"]) == case["output"]
    else:  # the release's -1 ("not accepted") is a ParseError here: re-asked, then a failed item
        with pytest.raises(ParseError):
            parse_score(case["input"])


@pytest.fixture(scope="module")
def outcomes():
    """Every release case through the harness's reward and judge client, one scripted server per case
    (the release's scripted reply for each gold; None there = a failed call, "500" here)."""
    got = {}
    for name, case in TERNARY.items():
        inp = case["input"]
        script = {f"Ground truth: {gold}\n": reply for gold, reply in inp["judge_replies"].items()}
        script["Reply with the letter A"] = "A"
        row = {"id": name, "question": inp["question"], "answers": inp["targets"]}
        cfg = {"backend": "openai", "model": "judge-test", "api_key_env": None, "timeout": 2.0, "max_retries": 0,
               "max_reasks": 1, "cache": None, "max_failed_share": 1.0}
        with JudgeServer(script, default="500") as server, open_judge({**cfg, "base_url": server.url}) as judge:
            start = len(server.requests)
            out = TruthRLReward(judge=judge)(completions=[as_completion(inp["solution"])], completion_ids=[[1, 2]],
                                             rows=[row])
            sent = [body["messages"] for body in server.requests[start:]]
        got[name] = (out, sent)
    return got


@pytest.mark.parametrize("name", sorted(TERNARY))
def test_the_ternary_reward_matches_the_release(name, outcomes):
    out, sent = outcomes[name]
    want = TERNARY[name]["output"]
    value = None if out.token_returns[0] is None else out.token_returns[0][0]
    if name in NO_SIGNAL:
        assert want["reward"] == -1 and value is None and out.no_signal_reasons == ["judge_failed"]
    elif name in FIRST_BOX:
        # "\boxed{Paris} then \boxed{Warsaw}": the release grades Paris (-1), the protocol reads Warsaw
        assert want["reward"] == -1 and value == 1.0
    else:
        assert value == float(want["reward"])
    if name not in FIRST_BOX:
        # the judge saw the release's user turns (the prediction unwrapped from its material block),
        # first-attempt requests only (a re-ask appends turns), under the release's system text
        firsts = [m for m in sent if len(m) == 2]
        turns = [m[1]["content"] for m in firsts]
        unwrapped = [re.sub(r"<material-[0-9a-f]{12} label=\"prediction\">(.*?)</material-[0-9a-f]{12}>", r"\1", t,
                            flags=re.S) for t in turns]
        # as a multiset: the judge client sends a row's golds concurrently, so their arrival order varies
        assert sorted(unwrapped) == sorted(want["judge_asked"])
        assert all(m[0]["content"] == SYSTEM for m in firsts)
        assert all(len(find_material(t)) == 1 for t in turns)


def test_the_system_text_is_the_releases_plus_the_material_rule():
    from factrl.harness.services.judge import MATERIAL_RULE
    from factrl_truthrl.judge_text import IN_CONTEXT_EXAMPLES, INSTRUCTIONS

    assert SYSTEM == INSTRUCTIONS + "\n" + IN_CONTEXT_EXAMPLES + MATERIAL_RULE + "\n"
    assert INSTRUCTIONS.endswith('an "score" field with value 1 or 0. \n') and len(IN_CONTEXT_EXAMPLES) == 9478


@pytest.mark.parametrize("case", refvec.load("truthrl", "paper_equations")["cases"], ids=lambda c: c["name"])
def test_the_papers_ternary_values(case):
    """Paper vectors (the stated reward, not code): each outcome's value, and a group's mean reward is
    its accuracy minus its hallucination rate."""
    reward = TruthRLReward(settings=TruthRLSettings.from_mapping(verifier="exact"))
    text = {"correct": "<answer>Warsaw</answer>", "abstain": "<answer>I don't know</answer>",
            "wrong": "<answer>Paris</answer>"}
    outcomes = [case["input"]] if isinstance(case["input"], str) else case["input"]
    row = {"id": "q", "question": "Where was Marie Curie born?", "answers": ["Warsaw"]}
    out = reward(completions=[text[o] for o in outcomes], completion_ids=[[1]] * len(outcomes), rows=[row] * len(outcomes))
    values = [r[0] for r in out.token_returns]
    if isinstance(case["input"], str):
        assert values == [case["output"]]
    else:
        assert sum(values) / len(values) == pytest.approx(case["output"]["mean_reward"])
        assert case["output"]["mean_reward"] == pytest.approx(case["output"]["accuracy_minus_hallucination"])

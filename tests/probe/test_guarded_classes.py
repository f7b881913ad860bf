"""Panel v2-v5's and v7's classes against the rewards they break and the guarded variants that close them
(configs/probe/guards.yaml): real rewards, the test index / store, the reference judge and
tiny-llama, on the three pool rows whose article is in the test store. One test per class:
flagged (hack or breach) for the originals it breaks, not for their guarded variants."""
from __future__ import annotations

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.probe import probe_method
from factrl.harness.probe.guards import guarded_config, load_guards

from .conftest import POOL

ROWS = POOL[1:4]  # Ulm, Marie Curie twice: each has its article in the test store
V5_ROWS = POOL[1:]  # and a multi-word gold ("Marie Curie"), whose first word is the panel's gold_fragment

FLAGGED = {"hack", "breach"}


def _probe_all(corver_overrides, store_path, llama_tokenizer, rows):
    evidence = ["evidence=file", f"evidence.store={store_path}"]
    configs = {"corver": corver_overrides + evidence, "fspo": ["method=fspo", "model=tiny-llama", *evidence],
               "rlfh": ["method=rlfh", "model=tiny-llama", *evidence],
               "forag": ["method=forag", "model=tiny-llama", *evidence],
               "knowrl": ["method=knowrl", "model=tiny-llama", *evidence]}
    guards = load_guards()
    out = {}
    for name, overrides in configs.items():
        cfg = compose(overrides)
        out[name, "original"] = probe_method(cfg, rows=rows, tokenizer=llama_tokenizer)
        guarded = guarded_config(cfg, guards)
        if guarded is not None:
            out[name, "guarded"] = probe_method(guarded, rows=rows, tokenizer=llama_tokenizer)
    return out


@pytest.fixture(scope="module")
def probed(corver_overrides, store_path, llama_tokenizer):
    """{(method, variant): ProbeResult} for CorVer, FSPO, RLFH, FoRAG and KnowRL, original and guarded."""
    return _probe_all(corver_overrides, store_path, llama_tokenizer, ROWS)


def verdicts(probed, kind: str) -> dict[str, str]:
    return {f"{m}/{v}": r.verdict(kind) for (m, v), r in probed.items()}


def test_guarded_variants_record_their_guards_and_keep_the_references(probed):
    assert probed["corver", "guarded"].guards == ["correctness=strict", "format_rule=single_block"]
    assert probed["fspo", "guarded"].guards == ["correctness=strict"]
    assert probed["rlfh", "guarded"].guards == ["dedupe_statements=true", "max_rewarded_statements=16",
                                                "answer_gate=strict", "positive_cap=answer", "answer_once=true"]
    assert probed["forag", "guarded"].guards == ["dedupe_statements=true", "max_rewarded_statements=16",
                                                 "positive_cap=answer"]
    assert all(r.guards == [] for (m, v), r in probed.items() if v == "original")  # originals by default
    assert probed["knowrl", "guarded"].guards == ["answer_guard=strict", "grade_check=matcher"]
    for m in ("corver", "fspo", "rlfh", "forag", "knowrl"):  # a guard never moves the honest answers
        for ref in ("honest_correct", "honest_wrong"):
            assert probed[m, "guarded"].stats[ref].mean == pytest.approx(probed[m, "original"].stats[ref].mean)
    assert "guarded: correctness=strict" in probed["fspo", "guarded"].heading


@pytest.mark.parametrize("kind", ["negated_gold", "retracted_gold", "hedged_gold"])
def test_a_gold_the_answer_does_not_assert_breaches_the_protocol_matcher_not_strict(probed, kind):
    got = verdicts(probed, kind)
    assert got["corver/original"] == "breach" and got["fspo/original"] == "breach"
    assert got["corver/guarded"] not in FLAGGED and got["fspo/guarded"] not in FLAGGED
    # the reference judge's grade is containment too: KnowRL pays it; its answer_guard=strict does not
    assert got["knowrl/original"] == "breach" and got["knowrl/guarded"] not in FLAGGED


def test_several_answer_blocks(probed):
    last = verdicts(probed, "blocks_wrong_gold")
    assert last["corver/original"] == "breach"  # format_rule paper: one closed block suffices; the last is read
    assert last["corver/guarded"] not in FLAGGED  # strict: multiple_blocks is wrong; single_block: a format failure
    assert probed["corver", "guarded"].stats["blocks_wrong_gold"].mean == pytest.approx(-2.0, abs=0.2)
    assert last["fspo/original"] not in FLAGGED  # FSPO's tag rule already fails it (score 0 = honest wrong)
    first = verdicts(probed, "blocks_gold_wrong")
    assert first["corver/original"] not in FLAGGED and first["corver/guarded"] not in FLAGGED
    assert first["knowrl/original"] == "hack"  # KnowRL grades the release's answer span: the first block
    assert first["knowrl/guarded"] not in FLAGGED  # answer_guard=strict: multiple_blocks is incorrect
    # RLFH: a second block makes the assessed answer no statement's, so its wrong statement costs
    # less (informativeness 2, not 5) than the honest wrong answer's; answer_gate=strict pays a
    # completion with several blocks no positive term
    assert last["rlfh/original"] == "hack" and last["rlfh/guarded"] not in FLAGGED


def test_the_rows_own_evidence_repeated(probed):
    got = verdicts(probed, "evidence_repeated")  # judged against the same sentences stated once
    forag, guarded = probed["forag", "original"], probed["forag", "guarded"]
    assert got["forag/original"] in FLAGGED and got["forag/guarded"] not in FLAGGED
    assert forag.stats["evidence_repeated"].mean > 5 * forag.stats["evidence_restated"].mean > 0
    # dedupe pays a repeat nothing; positive_cap scores a repeated statement of the gold (which the wrong
    # answer does not give) unsupported each time: penalties always count
    assert guarded.stats["evidence_repeated"].mean <= guarded.stats["evidence_restated"].mean + 1e-9
    # RLFH's release merges identical echoes (its labels are keyed by the sentence): repeats are judged once
    assert got["rlfh/original"] not in FLAGGED and got["rlfh/guarded"] not in FLAGGED
    # ... so panel v4 opens every copy differently: ten distinct echoes of the same statements
    reworded = verdicts(probed, "evidence_reworded")
    for m in ("rlfh", "forag"):
        original = probed[m, "original"].stats
        assert reworded[f"{m}/original"] == "breach" and reworded[f"{m}/guarded"] not in FLAGGED
        assert original["evidence_reworded"].mean > 5 * original["evidence_restated"].mean > 0
    assert probed["forag", "guarded"].stats["evidence_reworded"].mean <= guarded.stats["evidence_restated"].mean + 1e-9
    assert all(r.evidence_rows == len(ROWS) for r in probed.values())


def test_gold_only_in_the_reasoning_is_not_paid_by_answer_reading_rewards(probed):
    got = verdicts(probed, "gold_in_reasoning")
    for m in ("corver", "fspo", "knowrl"):
        assert got[f"{m}/original"] not in FLAGGED and got[f"{m}/guarded"] not in FLAGGED
    # KnowRL pays a refusal on purpose (not attempted: +1 over a wrong answer); the gold in the
    # reasoning is judged against that refusal (panel v3), and pays it exactly
    knowrl = probed["knowrl", "original"]
    assert knowrl.stats["refusal"].mean > knowrl.stats["honest_wrong"].mean
    assert knowrl.stats["gold_in_reasoning"].mean == pytest.approx(knowrl.stats["refusal"].mean)


def test_gold_outside_the_answer_is_paid_by_rlfh_not_by_its_answer_gate(probed):
    """A fact-level reward pays the true statement "the answer is GOLD" wherever it stands;
    answer_gate=strict scores a statement of the gold as Wrong when the answer does not give it."""
    original, guarded = probed["rlfh", "original"], probed["rlfh", "guarded"]
    for kind in ("gold_in_reasoning", "gold_reasoning_wrong_answer", "evidence_restated"):
        assert original.verdict(kind) in FLAGGED and guarded.verdict(kind) not in FLAGGED, kind
    assert guarded.stats["gold_reasoning_wrong_answer"].mean < guarded.stats["honest_wrong"].mean
    assert guarded.stats["gold_in_reasoning"].mean < guarded.stats["refusal"].mean == 0.0


def test_a_doubled_answer_is_paid_by_rlfh_once_with_answer_once(probed):
    """Panel v7: the honest correct answer whose answer block states the gold twice ("GOLD. So the
    answer is GOLD."), judged against the honest correct answer. RLFH's original pays the
    restatement as one more Correct statement rated 5 (+1.22 on a row whose statements the
    evidence supports); answer_once pays the first statement of a credited answer only."""
    got = verdicts(probed, "answer_doubled")
    original, guarded = probed["rlfh", "original"].stats, probed["rlfh", "guarded"].stats
    assert got["rlfh/original"] in FLAGGED and got["rlfh/guarded"] == "ok"
    assert original["answer_doubled"].mean > original["honest_correct"].mean + 0.5
    assert guarded["answer_doubled"].mean <= guarded["honest_correct"].mean + 1e-9
    for m in ("corver", "fspo", "knowrl", "forag"):  # an answer-reading reward pays it as the honest answer
        assert got[f"{m}/guarded"] not in FLAGGED, m


@pytest.fixture(scope="module")
def nover_probe(store_path):
    """NOVER with its policy (tiny-llama, G = 2): what is equal does not depend on the model."""
    pytest.importorskip("factrl_nover")
    cfg = compose(["method=nover", "model=tiny-llama", "evidence=file", f"evidence.store={store_path}"])
    return probe_method(cfg, rows=ROWS[:2], batch_size=8)


def test_nover_scores_in_whole_groups_with_the_policy_and_pays_the_gold_in_the_reasoning(nover_probe):
    r = nover_probe
    assert r.group_size == 2 and r.components["proxy"]["backend"] == "policy-adapter"
    assert all(s.no_signal == 0 and s.n == 2 for s in r.stats.values())
    # NOVER never reads the answer block: the gold stated in the reasoning with "I don't know" (or a
    # wrong answer) as the answer earns exactly the honest correct answer's return
    for kind in ("gold_in_reasoning", "gold_reasoning_wrong_answer"):
        assert r.stats[kind].mean == pytest.approx(r.stats["honest_correct"].mean)
        assert r.verdict(kind) in ("breach", "ordering_broken")  # breach wherever the policy prefers the gold
    assert r.stats["blocks_wrong_gold"].mean == 0.0  # two answer blocks fail NOVER's format rule: R = 0


@pytest.fixture(scope="module")
def nover_guarded(store_path):
    pytest.importorskip("factrl_nover")
    cfg = compose(["method=nover", "model=tiny-llama", "evidence=file", f"evidence.store={store_path}"])
    return probe_method(guarded_config(cfg, load_guards()), rows=ROWS[:2], batch_size=8)


def test_nover_answer_gate_closes_the_gold_in_the_reasoning(nover_probe, nover_guarded):
    g = nover_guarded
    assert g.guards == ["answer_gate=strict"]
    assert g.stats["honest_correct"].mean == pytest.approx(nover_probe.stats["honest_correct"].mean)
    for kind in ("gold_in_reasoning", "gold_reasoning_wrong_answer"):
        assert nover_probe.verdict(kind) in ("breach", "ordering_broken")
        assert g.verdict(kind) not in FLAGGED and g.verdict(kind) != "ordering_broken"
        assert g.stats[kind].mean == pytest.approx(1.0)  # the format term only (w_format)
        assert g.stats[kind].mean < g.stats["honest_correct"].mean
    # strict accuracy's gate: an answer that contains the gold but negates, retracts or lists it
    # (which the protocol's matcher, and so answer_gate=match, credits) earns the format term only
    for kind in ("negated_gold", "retracted_gold", "hedged_gold"):
        assert g.verdict(kind) not in FLAGGED and g.stats[kind].mean == pytest.approx(1.0)
    # the doubled answer (v7) keeps the honest correct answer's reasoning: NOVER pays it exactly that
    for result in (nover_probe, g):
        assert result.stats["answer_doubled"].mean == pytest.approx(result.stats["honest_correct"].mean)
    assert g.verdict("answer_doubled") == "ok"


def test_a_guard_value_is_checked_in_one_line():
    from factrl.harness.core.errors import ConfigError
    from factrl.harness.core.registry import get_method

    for name in ("corver", "fspo"):
        with pytest.raises(ConfigError, match=rf"method={name}: method.correctness='fuzzy': choose one of "
                                              r"protocol, strict"):
            get_method(name)(compose([f"method={name}", "method.correctness=fuzzy"]).method)


V5 = ("gold_named_rejected", "gold_listed_with_and", "gold_in_longer_name", "gold_fragment")


def test_panel_v5_answers_that_name_the_gold_without_giving_it(corver_overrides, store_path, llama_tokenizer):
    """The gold named beside another asserted answer, listed with "and", followed by words that make
    another name, and a fragment of a multi-word gold: the protocol's matcher credits each, so the
    rewards built on it pay them in full; strict accuracy v3 withdraws each, so no guarded variant
    (nor KnowRL's answer_guard) is breached by any of them."""
    probed = _probe_all(corver_overrides, store_path, llama_tokenizer, V5_ROWS)
    for kind in V5:
        got = verdicts(probed, kind)
        for m in ("corver", "fspo", "knowrl"):
            assert got[f"{m}/original"] in FLAGGED, (kind, m)  # the matcher's credit, paid
        for m in ("corver", "fspo", "knowrl", "rlfh", "forag"):
            assert got[f"{m}/guarded"] != "breach", (kind, m)
        for m in ("corver", "fspo", "knowrl"):  # the answer-reading guards pay them as the honest wrong answer
            assert got[f"{m}/guarded"] not in FLAGGED, (kind, m)
    for name in ("corver", "fspo", "knowrl"):
        assert probed[name, "original"].verdict("gold_in_longer_name") == "breach", name

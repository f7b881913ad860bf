"""NPM scoring against FActScore's own numbers (tests/reference_vectors/factscore/npm_*.json:
upstream's NPM.get_probabilty run on the project's stand-in masked LM, relabelled so ":" has
RoBERTa's id 35), and the tokenizer-derived ids on a tiny masked LM whose special ids are not
RoBERTa's."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.evals.factscore_helpers import build_tiny_mlm

PASSAGES = ["Paris is the capital of France.", "The river Seine flows through Paris."]
CLAIM = "Paris is the capital of France"
VECTORS = Path(__file__).resolve().parents[1] / "reference_vectors" / "factscore"
# The vectors' ids are in the relabelled space (":" 35, "?" 30); every other id is the stand-in's.
SWAP = {30: 35, 35: 30}


def _vectors(name):
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def _swapped(ids):
    return [SWAP.get(int(i), int(i)) for i in ids]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from factrl.evals.factscore import load_npm

    path = build_tiny_mlm(tmp_path_factory.mktemp("npm") / "tiny-mlm")
    scorer, component = load_npm({"model": str(path)})
    return scorer, component


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    """The stand-in the vectors were computed on (build_standin seed 0), unrelabelled."""
    from factrl.evals.factscore import build_standin, load_npm

    path = build_standin(tmp_path_factory.mktemp("npm-standin") / "standin", seed=0)
    scorer, _ = load_npm({"model": str(path), "stopwords": "words"})
    return scorer


def _cases(name):
    doc = _vectors(name)
    listed = re.search(r"Stopword ids: (\[[^\]]*\])", doc["notes"])
    stop = frozenset(_swapped(json.loads(listed.group(1)))) if listed else frozenset()
    return [(stop, c) for c in doc["cases"]]


NPM_CASES = _cases("npm_no_stopwords.json") + _cases("npm_listed_stopwords.json")


@pytest.mark.parametrize("stop, case", NPM_CASES, ids=[f"{'listed' if s else 'none'}: {c['name']}"
                                                       for s, c in NPM_CASES])
def test_npm_probabilities_are_factscores(standin, stop, case):
    scorer, out = standin, case["output"]
    scorer.stop_ids = stop  # the stopword ids upstream read from roberta_stopwords.txt for this file
    claim, passages = case["input"]["claim"], out.get("passages")
    if not out["ok"]:  # no scorable position: FActScore raises; the harness skips and counts
        assert out["error"] == "IndexError"
        assert scorer.score(claim, case["input"]["article_passages"][:3]) is None
        return
    got = scorer.score_positions(claim, passages)
    assert got == pytest.approx(out["per_position_p"], rel=1e-5, abs=1e-8)
    assert scorer.score(claim, passages) == pytest.approx(out["p"], rel=1e-5)
    assert (scorer.score(claim, passages) > 0.3) == out["supported"]


@pytest.mark.parametrize("case", _vectors("npm_no_stopwords.json")["cases"], ids=lambda c: c["name"])
def test_npm_forward_inputs_are_factscores(standin, case):
    """Passages enter the model without their outer <s>/</s> (inner sentence markers kept); each
    masked query is the decoded, re-tokenized text FActScore sends."""
    scorer, out = standin, case["output"]
    scorer.stop_ids = frozenset()
    passages, queries = out["forward_inputs"]
    assert [_swapped(scorer.passage_ids(p)) for p in passages["texts"]] == \
        [row[:len(row) - row[::-1].index(2)] if 2 in row else row for row in passages["input_ids"]]
    ids, positions = scorer.query(case["input"]["claim"])
    assert _swapped(ids) == out["query_ids_after_prefix_cut"]
    assert _swapped(ids[p] for p in positions) == out["gold_ids"]
    assert [_swapped(r) for r in scorer.masked_inputs(ids, positions)] == queries["input_ids"]
    assert [scorer.tokenizer.decode(ids[:p] + [scorer.mask_id] + ids[p + 1:]) for p in positions] == \
        out["masked_queries"]


def test_ids_are_derived_from_the_tokenizer_not_roberta(loaded):
    scorer, component = loaded
    tok = scorer.tokenizer
    assert scorer.mask_id == tok.mask_token_id == 2  # RoBERTa's is 50264
    assert scorer.special_ids == {0, 1, 2, 3, 4}
    assert scorer.prefix_ids == tok("Fact:", add_special_tokens=False)["input_ids"]
    assert scorer.colon_id == tok(":", add_special_tokens=False)["input_ids"][0] != 35
    assert scorer.marker_ids == {3, 4}  # this tokenizer's <s> / </s> play RoBERTa's 0 / 2
    ids, positions = scorer.query("the of Paris")
    assert ids[:len(scorer.prefix_ids)] == scorer.prefix_ids and 3 not in ids and 4 not in ids
    assert min(positions) >= len(scorer.prefix_ids)  # the prefix through ":" is never scored
    assert 3 not in scorer.passage_ids(PASSAGES[0]) and 4 not in scorer.passage_ids(PASSAGES[0])
    assert tok(" the", add_special_tokens=False)["input_ids"][0] in scorer.stop_ids
    assert [ids[p] for p in positions] and all(ids[p] not in scorer.stop_ids for p in positions)
    assert component["stand_in"] is True and component["dtype"] == "float32"


def test_a_claim_without_scorable_tokens_is_skipped_and_counted(loaded):
    scorer, _ = loaded
    before = scorer.stats["unscorable"]
    assert scorer.score("The of the", PASSAGES) is None  # FActScore crashes here
    assert scorer.stats["unscorable"] == before + 1


def test_no_passages_or_absent_tokens_score_zero(loaded):
    scorer, _ = loaded
    assert scorer.score(CLAIM, []) == 0.0
    assert scorer.score("Eros", ["Berlin Berlin Berlin"]) == 0.0


def test_hub_id_fails_fast_offline_naming_the_stand_in_and_rejects_a_branch_revision(monkeypatch):
    from factrl.evals.factscore.masked_lm import locate_model
    from factrl.harness.core.errors import ConfigError, ModelNotFoundError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-hf-home")
    with pytest.raises(ConfigError, match="40-hex"):
        locate_model("facebook/npm-single", "main")
    for revision in (None, "0" * 40):
        with pytest.raises(ModelNotFoundError, match="npm.model=facebook/npm-single.*npm.model=standin"):
            locate_model("facebook/npm-single", revision)


def _fake_hub_cache(home, commit):
    """A Hugging Face cache holding facebook/npm-single@commit (a tiny RoBERTa of the real class),
    laid out as huggingface_hub writes it: refs/main -> snapshots/<commit>/."""
    repo = home / "hub" / "models--facebook--npm-single"
    build_tiny_mlm(repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)


def test_the_default_npm_single_loads_from_the_cache_and_records_the_commit_it_used(tmp_path, monkeypatch):
    from factrl.evals.factscore import load_npm
    from factrl.evals.judged_settings import defaults

    assert defaults("factscore_options")["npm"]["model"] == "facebook/npm-single"
    commit = "1234567890abcdef1234567890abcdef12345678"
    _fake_hub_cache(tmp_path, commit)
    import huggingface_hub.constants

    # huggingface_hub reads HF_HOME once at import; its cache folder is looked up per call.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _, unpinned = load_npm({"model": "facebook/npm-single"})
    assert unpinned["revision"] == commit and unpinned["revision_pinned"] is False
    assert unpinned["stand_in"] is False and unpinned["label"] == "NPM (npm-single)"
    _, pinned = load_npm({"model": "facebook/npm-single", "revision": commit})
    assert pinned["revision"] == commit and pinned["revision_pinned"] is True


def test_embedded_models_default_to_the_recorded_stand_in_and_paper_models_to_npm_single():
    from factrl.harness.engine.config import compose

    for model, expected in (("tiny-llama", "standin"), ("smollm2-135m", "standin"), ("llama-3.2-3b",
                                                                                       "facebook/npm-single")):
        cfg = compose([f"model={model}"])
        assert cfg.eval.factscore_options.npm.model == expected, model


def test_the_offline_stand_in_is_built_once_and_recorded_as_a_stand_in(tmp_path, monkeypatch):
    from factrl.evals.factscore import load_npm
    from factrl.evals.factscore.masked_lm import STANDIN_VERSION

    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    scorer, component = load_npm({"model": "standin"})
    folder = tmp_path / "factscore" / f"npm-standin-v{STANDIN_VERSION}"
    built = (folder / "model.safetensors").stat().st_mtime_ns
    again, _ = load_npm({"model": "standin"})
    assert (folder / "model.safetensors").stat().st_mtime_ns == built  # reused, not rebuilt
    assert component["stand_in"] is True and "npm-single" in component["note"]
    assert component["dtype"] == "float32" and next(scorer.model.parameters()).dtype.is_floating_point
    assert scorer.score("Paris is the capital of France", PASSAGES) == again.score("Paris is the capital of France",
                                                                                   PASSAGES)


def _roberta_like_tokenizer():
    """A word-level tokenizer with RoBERTa's vocabulary size and its first ids (". ", " the")."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, ".": 4, "\u0120the": 5, ",": 6, "\u0120to": 7}
    vocab.update({f"w{i}": i for i in range(8, 50264)})
    vocab["<mask>"] = 50264
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token="<mask>")


def test_factscore_ids_only_on_a_roberta_vocabulary_and_the_difference_is_reported(loaded):
    from factrl.evals.factscore import stopwords as stoplib
    from factrl.harness.core.errors import ConfigError

    assert len(stoplib.FACTSCORE_IDS) == 211
    scorer, _ = loaded
    assert not stoplib.is_roberta_vocab(scorer.tokenizer) and scorer.stopword_diff is None
    with pytest.raises(ConfigError, match="stopwords=factscore_ids needs .*RoBERTa"):
        stoplib.stopword_ids(scorer.tokenizer, "factscore_ids")
    with pytest.raises(ConfigError, match="stopwords='nltk'"):
        stoplib.stopword_ids(scorer.tokenizer, "nltk")
    roberta = _roberta_like_tokenizer()
    assert stoplib.is_roberta_vocab(roberta)
    assert stoplib.stopword_ids(roberta, "factscore_ids") == stoplib.FACTSCORE_IDS
    report = stoplib.diff(roberta, frozenset({4, 5, 9999}))
    assert report["shared"] == 2 and report["only_ours"] == ["w9999"]
    assert len(report["only_reference"]) == 209 and report["only_reference"][:2] == [",", "\u0120to"]

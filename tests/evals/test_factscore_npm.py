"""NPM scoring with a tiny masked LM the test builds, against a hand computation (BASELINES 7)."""
from __future__ import annotations

import math

import pytest

from tests.evals.factscore_helpers import build_tiny_mlm

PASSAGES = ["Paris is the capital of France.", "The river Seine flows through Paris."]
CLAIM = "Paris is the capital of France"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from factrl.evals.factscore import load_npm

    path = build_tiny_mlm(tmp_path_factory.mktemp("npm") / "tiny-mlm")
    scorer, component = load_npm({"model": str(path)})
    return scorer, component


def _hidden(model, ids):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0]


def hand_score(model, tokenizer, claim, passages, stop_ids):
    """FActScore's get_probabilty step by step, with plain torch ops (no log-sum-exp)."""
    import torch

    special = set(tokenizer.all_special_ids)
    vectors, tokens = [], []
    for text in passages:
        ids = tokenizer(text)["input_ids"]
        hidden = _hidden(model, ids)
        for j, tok in enumerate(ids):
            if tok not in special:
                vectors.append(hidden[j])
                tokens.append(tok)
    p = torch.stack(vectors)
    prefix = tokenizer("Fact:", add_special_tokens=False)["input_ids"]
    fact = tokenizer(" " + claim, add_special_tokens=False)["input_ids"]
    ids = [tokenizer.bos_token_id, *prefix, *fact, tokenizer.eos_token_id]
    probs = []
    for i in range(1 + len(prefix), 1 + len(prefix) + len(fact)):
        if ids[i] in special or ids[i] in stop_ids:
            continue
        masked = list(ids)
        masked[i] = tokenizer.mask_token_id
        q = _hidden(model, masked)[i]
        s = torch.exp((p @ q) / math.sqrt(model.config.hidden_size))
        same = torch.tensor([t == ids[i] for t in tokens])
        probs.append(float(s[same].sum() / s.sum()))
    return sum(probs) / len(probs), len(probs)


def test_npm_matches_a_hand_computation_on_two_passages(loaded):
    scorer, _ = loaded
    expected, positions = hand_score(scorer.model, scorer.tokenizer, CLAIM, PASSAGES, scorer.stop_ids)
    assert positions >= 2
    got = scorer.score(CLAIM, PASSAGES)
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert 0.0 < got <= 1.0


def test_ids_are_derived_from_the_tokenizer_not_roberta(loaded):
    scorer, component = loaded
    tok = scorer.tokenizer
    assert scorer.mask_id == tok.mask_token_id == 2  # RoBERTa's is 50264
    assert scorer.special_ids == {0, 1, 2, 3, 4}
    assert scorer.prefix_ids == tok("Fact:", add_special_tokens=False)["input_ids"]
    ids, positions = scorer.query("the of Paris")
    assert ids[0] == 3 and ids[-1] == 4
    assert min(positions) >= 1 + len(scorer.prefix_ids)  # the prefix through ":" is never scored
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
    from factrl.harness.errors import ConfigError, ModelNotFoundError

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
    from factrl.harness.config import compose

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
    from factrl.harness.errors import ConfigError

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

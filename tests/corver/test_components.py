"""CorVer's components: extractor, corpus and settings, stand-ins marked."""
from __future__ import annotations

from omegaconf import OmegaConf

from factrl.harness.engine.config import compose
from factrl.harness.core.method import RunContext
from factrl.harness.training.components import check_components, stand_in_names
from factrl.methods.corver import QUCO_ID, CorVer, corpus_component, extractor_component


def _built(corpus_cfg, llama_tokenizer, *overrides):
    cfg = compose(["model=tiny-llama", "method.extractor.backend=heuristic", *overrides])
    cfg.corpus = OmegaConf.create(corpus_cfg)
    method = CorVer(cfg.method)
    reward = method.build_reward(RunContext(config=cfg, tokenizer=llama_tokenizer))
    return method, reward


def test_heuristic_extractor_is_a_stand_in_and_the_index_is_described(corpus_cfg, llama_tokenizer):
    method, reward = _built(corpus_cfg, llama_tokenizer, "method.aggregation=min", "method.alphas=[-0.3,-0.1,0,0.1]")
    parts = check_components("corver", method.components(reward))
    assert set(parts) == {"extractor", "corpus", "settings"}
    extractor = parts["extractor"]
    assert (extractor["backend"], extractor["stand_in"]) == ("heuristic", True)
    assert extractor["label"] == "heuristic extractor"
    assert QUCO_ID in extractor["note"]
    corpus = parts["corpus"]
    assert corpus["backend"] == "local" and corpus["stand_in"] is False
    assert corpus["manifest_hash"] == reward.counter.manifest_hash and corpus["index_dir"] == corpus_cfg["index_dir"]
    assert corpus["tokenizer"]["spec"] == "tiny-llama" and corpus["max_diff_tokens"] == 1000
    settings = parts["settings"]
    assert settings["aggregation"] == "min" and settings["alphas"] == [-0.3, -0.1, 0.0, 0.1]
    assert settings["taus"] == [5, 20] and settings["lambda_c"] == 1.0
    # Deliberate differences from the release: the released alphas (-0.3 ...) are not one, min is.
    differs = {d["setting"] for d in settings["differences"]}
    assert "aggregation" in differs and "alphas" not in differs and "correctness" in differs
    assert "advantage_layout" in differs  # the release's shifted advantages (README, Training engine)
    assert stand_in_names(parts) == ["extractor"]


def test_paper_alphas_are_recorded_as_a_difference_from_the_release(corpus_cfg, llama_tokenizer):
    method, reward = _built(corpus_cfg, llama_tokenizer)
    differs = {d["setting"]: d for d in method.components(reward)["settings"]["differences"]}
    assert "sentence_reward.py:39-45" in differs["alphas"]["original"] and "aggregation" not in differs


def test_demo_index_remote_and_exact_counts_are_stand_ins(counter, corpus_cfg, llama_tokenizer):
    from factrl.harness.services.corpus import open_counter

    demo = corpus_component(counter, {"name": "demo", "backend": "local", "source": "demo", "index_dir": None})
    assert demo["stand_in"] is True and demo["label"] == "demo corpus" and "6.4M articles" in demo["note"]
    assert corpus_component(counter, {"name": "wikipedia", "source": "path", "index_dir": "/x"})["stand_in"] is False
    exact_cfg = {**corpus_cfg, "backend": "exact"}
    with open_counter(exact_cfg, tokenizer=llama_tokenizer) as exact:
        assert corpus_component(exact, exact_cfg)["stand_in"] is True
    # Opening the remote backend sends nothing; the address is never contacted.
    remote_cfg = {"name": "remote", "backend": "remote", "api_url": "http://127.0.0.1:9/", "index": "v4_rpj_llama_s4",
                  "cache": False}
    with open_counter(remote_cfg) as remote:
        entry = corpus_component(remote, remote_cfg)
    assert entry["stand_in"] is True and "v4_rpj_llama_s4" in entry["note"] and entry["index"] == "v4_rpj_llama_s4"


def test_a_model_extractor_other_than_quco_is_a_stand_in_with_its_revision():
    from factrl.methods.corver.extractor import build_extractor

    ext = build_extractor({"backend": "llm", "model": "tiny-llama", "dtype": "float32", "device": "cpu"})
    entry = extractor_component(ext)
    assert entry["model"] == "embedded:tiny-llama" and entry["revision"] == ext.identity.revision
    assert entry["stand_in"] is True and QUCO_ID in entry["note"] and entry["sha256"] == ext.identity.sha256
    assert entry["decoding"]["temperature"] == 0.7 and entry["prompt_version"] == "2"


def test_lambda_c_zero_uses_neither_extractor_nor_corpus(llama_tokenizer):
    method, reward = _built({"name": "none", "backend": "none"}, llama_tokenizer, "method.lambda_c=0")
    parts = check_components("corver", method.components(reward))
    assert parts["extractor"]["used"] is False and parts["corpus"]["used"] is False
    assert stand_in_names(parts) == [] and parts["settings"]["lambda_c"] == 0.0

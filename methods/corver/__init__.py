"""`corver`: corpus-grounded sentence rewards for GRPO (Fan et al., arXiv 2605.29648).

Response-level correctness and format rewards for every token, plus, for the tokens of
each sentence of the reasoning and answer, a reward from how often the sentence's subject
and object co-occur in a Wikipedia infini-gram index. See README.md in this folder.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.config_values import as_container
from factrl.harness.core.errors import ConfigError
from factrl.harness.core.method import Method, RunContext, settings_entry

from .extractor import QUCO_ID
from .token_reward import CorVerReward, CorVerSettings


def reward_from_config(settings: CorVerSettings | Any, *, tokenizer: Any, corpus_cfg: Any = None,
                       extractor: Any = None, counter: Any = None) -> CorVerReward:
    """The reward callable for CorVer settings (or a `method` mapping, parsed over the YAML
    defaults); opens the extractor and the counter unless given (tests pass their own).
    Nothing is opened when lambda_c = 0 (ablation A1)."""
    if not isinstance(settings, CorVerSettings):
        settings = CorVerSettings.from_mapping(settings)
    corpus = dict(as_container(corpus_cfg) or {})
    if settings.lambda_c != 0.0:
        if counter is None:
            from factrl.harness.services.corpus import open_counter

            from factrl.harness.services.corpus.settings import CorpusSettings

            if corpus_cfg is None or not CorpusSettings.from_mapping(corpus_cfg).counts:
                raise ConfigError("method=corver needs a corpus (corpus=demo or corpus=<your index>); "
                                  "with corpus=none only method.lambda_c=0 (ablation A1) runs.")
            counter = open_counter(corpus_cfg)
        if extractor is None:
            from .extractor import build_extractor

            extractor = build_extractor(settings.extractor)
    return CorVerReward(tokenizer=tokenizer, settings=settings, extractor=extractor, counter=counter,
                        corpus_config=corpus)


class CorVer(Method):
    name = "corver"
    label = "CorVer"
    algorithm = "grpo"
    description = "corpus co-occurrence sentence rewards mapped to tokens, plus correctness and format (GRPO)"
    version = "2"  # 2: the released QuCo-RAG extractor prompt and reply parser (prompt version 2)
    settings_class = CorVerSettings

    def build_reward(self, ctx: RunContext) -> CorVerReward:
        if ctx.tokenizer is None:
            raise ConfigError("method=corver needs the policy tokenizer in the run context (token alignment)")
        corpus_cfg = ctx.config.get("corpus") if ctx.config is not None else None
        reward = reward_from_config(self.settings, tokenizer=ctx.tokenizer, corpus_cfg=corpus_cfg)
        ext = reward.extractor
        ctx.logger.info("corver reward: lambda_c=%s aggregation=%s extractor=%s corpus=%s",
                        reward.settings.lambda_c, reward.corpus.aggregation,
                        getattr(ext, "name", None), getattr(reward.counter, "description", None))
        return reward

    def components(self, reward: CorVerReward) -> dict[str, dict[str, Any]]:
        """extractor, corpus and settings: what besides the method version can change a CorVer result."""
        return {"extractor": extractor_component(reward.extractor),
                "corpus": corpus_component(reward.counter, reward.corpus_config),
                "settings": settings_component(reward)}


def _unused(kind: str) -> dict[str, Any]:
    # lambda_c = 0 (ablation A1) opens neither extractor nor corpus: nothing of theirs reaches the result.
    return {"kind": kind, "backend": None, "model": None, "revision": None, "stand_in": False,
            "label": f"no {kind} (lambda_c=0)", "used": False}


def extractor_component(ext: Any) -> dict[str, Any]:
    """The triple extractor: the paper's QuCo checkpoint, or which stand-in replaced it."""
    if ext is None:
        return _unused("extractor")
    backend = str(getattr(ext, "name", type(ext).__name__))
    from .parsing import PROMPT_VERSION

    if backend == "heuristic":
        return {"kind": "extractor", "backend": "heuristic", "model": None, "revision": None, "stand_in": True,
                "label": "heuristic extractor", "used": True,
                "note": f"capitalised spans and a copula pattern stand in for the paper's {QUCO_ID} "
                        f"(offline tests and demos); not paper-faithful"}
    identity = getattr(ext, "identity", None)
    if identity is None:  # an extractor object handed in by the caller
        return {"kind": "extractor", "backend": backend, "model": None, "revision": None, "stand_in": True,
                "label": f"{backend} extractor", "used": True,
                "note": f"a caller-supplied extractor ({type(ext).__name__}) in place of {QUCO_ID}"}
    stand_in = identity.id != QUCO_ID  # a local copy cannot be verified as QuCo, so it counts as one
    generation = getattr(ext, "generation", None)
    entry = {"kind": "extractor", "backend": backend, "model": identity.id, "revision": identity.revision,
             "sha256": identity.sha256, "stand_in": stand_in, "used": True,
             "label": f"{identity.name} extractor" if stand_in else "QuCo extractor",
             "prompt_version": PROMPT_VERSION, "max_context": getattr(ext, "max_context", None),
             "decoding": {k: getattr(generation, k, None) for k in ("do_sample", "temperature", "top_p", "top_k",
                                                                   "repetition_penalty", "max_new_tokens")}}
    if stand_in:
        entry["note"] = f"the {backend} backend with {identity.id} in place of the paper's {QUCO_ID}"
    return entry


def corpus_component(counter: Any, corpus_cfg: dict[str, Any]) -> dict[str, Any]:
    """The co-occurrence index: backend, directory, manifest hash and tokenizer; the demo index,
    the public API and exact counting stand in for the paper's engine over English Wikipedia."""
    if counter is None:
        return _unused("corpus")
    described = dict(getattr(counter, "description", None) or {})
    backend = str(described.get("backend") or corpus_cfg.get("backend"))
    name = corpus_cfg.get("name")
    entry = {"kind": "corpus", "backend": backend, "model": None, "revision": None, "used": True,
             "name": name, "index_dir": described.get("index_dir"),
             "manifest_hash": getattr(counter, "manifest_hash", None), "tokenizer": described.get("tokenizer"),
             "documents": described.get("documents"), "tokens": described.get("tokens"),
             "max_diff_tokens": corpus_cfg.get("max_diff_tokens"), "max_clause_freq": corpus_cfg.get("max_clause_freq"),
             "case_variants": corpus_cfg.get("case_variants")}
    if backend == "remote":
        entry.update(index=described.get("index"), api_url=described.get("api_url"),
                     note=f"the public infini-gram API index {described.get('index')} (it has no Wikipedia-only "
                          f"index, docs/PROTOCOL.md §8) in place of the paper's enwiki index", label="infini-gram API counts")
    elif backend == "exact":
        entry.update(note="exact co-occurrence counts (analysis only) in place of the engine's count_cnf, on which "
                          "the thresholds were calibrated (docs/PROTOCOL.md §2)", label="exact counts")
    elif corpus_cfg.get("source") == "demo" and not corpus_cfg.get("index_dir"):
        entry.update(note="the demo index (Wikipedia lead sections, about 1M tokens) in place of the paper's "
                          "English Wikipedia index (6.4M articles, 5.5B tokens)", label="demo corpus")
    else:
        entry.update(label=f"{name} index")
    entry["stand_in"] = "note" in entry
    return entry


def guards(response: Any) -> list[str]:
    """The guards this run turned on (docs/CONTRACTS.md "Guards"; none = the paper's reward):
    tables mark a row or a probe column that used any."""
    found = []
    if response.correctness != "protocol":
        found.append(f"correctness={response.correctness}")
    if response.format_rule != "paper":
        found.append(f"format_rule={response.format_rule}")
    return found


def settings_component(reward: CorVerReward) -> dict[str, Any]:
    """The reward settings that change scores (aggregation, taus, alphas, weights, assignment), and
    this run's deliberate differences from the released code (`differences`, fidelity.py)."""
    from .fidelity import differences

    corpus, response, settings = reward.corpus, reward.response, reward.settings
    return settings_entry("CorVer settings", {
        "aggregation": corpus.aggregation, "taus": list(corpus.taus),
        "alphas": list(corpus.alphas), "relcheck_penalty": corpus.relcheck_penalty,
        "lambda_c": settings.lambda_c, "lambda_j": response.lambda_j, "lambda_f": response.lambda_f,
        "correct": response.correct, "wrong": response.wrong, "format_rule": response.format_rule,
        "correctness": response.correctness, "guards": guards(response),
        "length_eta": response.length_eta, "length_l0": response.length_l0,
        "assignment": settings.assignment, "alignment_threshold": settings.alignment_threshold,
        "splitter": settings.splitter, "differences": differences(settings, corpus)})


METHOD = CorVer

__all__ = ["METHOD", "QUCO_ID", "CorVer", "CorVerReward", "CorVerSettings", "corpus_component", "extractor_component", "reward_from_config",
           "settings_component"]

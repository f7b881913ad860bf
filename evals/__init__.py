"""factrl.evals: the shared evaluator (datasets, generation backends, exact scoring).

Light to import: `factrl.harness.core.answers` (answer extraction, normalisation and matching, used
by the training reward) needs neither torch nor datasets; `evaluate` loads the generation
machinery only when called. `SCORER_VERSION` is the default scorer's version (defined beside
the answer helpers it pins, `factrl.harness.core.answers`).

    from factrl.evals import evaluate
    metrics = evaluate(cfg, identity=resolve(cfg.model), adapter=None, out_dir=run / "eval")
"""
from __future__ import annotations

from typing import Any


def evaluate(cfg: Any, *, identity: Any, adapter: Any = None, out_dir: Any, model: Any = None,
             tokenizer: Any = None, shard: Any = None) -> dict:
    """Generate and score every set of `cfg.eval`; see `factrl.evals.runner.evaluate`."""
    from .runner import evaluate as _evaluate

    return _evaluate(cfg, identity=identity, adapter=adapter, out_dir=out_dir, model=model, tokenizer=tokenizer,
                     shard=shard)


def __getattr__(name: str) -> Any:
    # Lazy, so importing factrl.harness.core.answers (the training reward) loads no scorer code.
    if name == "SCORER_VERSION":
        from .scorers.default import SCORER_VERSION

        return SCORER_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SCORER_VERSION", "evaluate"]

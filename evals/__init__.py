"""factrl.evals: the shared evaluator (datasets, generation backends, exact scoring).

Light to import: `factrl.evals.scoring` (used by the training reward) needs neither torch nor
datasets; `evaluate` loads the generation machinery only when called.

    from factrl.evals import evaluate
    metrics = evaluate(cfg, identity=resolve(cfg.model), adapter=None, out_dir=run / "eval")
"""
from __future__ import annotations

from typing import Any

from .scoring import SCORER_VERSION


def evaluate(cfg: Any, *, identity: Any, adapter: Any = None, out_dir: Any, model: Any = None,
             tokenizer: Any = None) -> dict:
    """Generate and score every set of `cfg.eval`; see `factrl.evals.runner.evaluate`."""
    from .runner import evaluate as _evaluate

    return _evaluate(cfg, identity=identity, adapter=adapter, out_dir=out_dir, model=model, tokenizer=tokenizer)


__all__ = ["SCORER_VERSION", "evaluate"]

"""The "did you mean" hint of every evals registry (sets, scorers): `factrl.harness.core.errors.did_you_mean`."""
from factrl.harness.core.errors import did_you_mean

__all__ = ["did_you_mean"]

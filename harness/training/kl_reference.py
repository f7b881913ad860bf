"""The KL reference under one of the method's adapter copies (`Method.kl_reference_adapter`).

By default the GRPO engine's KL term compares the policy with the base model: TRL 1.16 computes
the reference log-probabilities of a PEFT policy in `_generate_and_score_completions` under
`use_adapter(model, "ref" if "ref" in model.peft_config else None)`, i.e. with every adapter
disabled (trl/trainer/grpo_trainer.py:2727). NOVER's released trainer uses its proxy (a copy
of the policy, mixed toward it at each save) as the reference instead (thinkwee/NOVER@cb1a4ef
trainer.py:95-99,250-255). A method that names a copy in `kl_reference_adapter` gets that:
for the duration of each batch's scoring, TRL's call runs the forward under the copy
(`PolicyHandle.using`, eval mode, every flag restored) in place of the disabled adapters. The
scope checks that TRL asked for the reference, so a TRL that computes it another way fails
loudly instead of silently falling back to the base model.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ..core.errors import ConfigError


def reference_adapter(method: Any, policy: Any, beta: float) -> str | None:
    """The adapter copy the KL term compares with (None: the base model, TRL's own way).

    A name needs a method with `needs_policy` whose `setup_policy` made that copy."""
    name = getattr(method, "kl_reference_adapter", None) if method is not None else None
    if not name or float(beta) == 0.0:
        return None
    if policy is None:
        raise ConfigError(f"method '{method.name}': kl_reference_adapter={name!r} needs needs_policy = True "
                          f"(the copy lives on the policy handle)")
    if name not in policy.copies:
        raise ConfigError(f"method '{method.name}': kl_reference_adapter={name!r} is not one of the adapter copies "
                          f"its setup_policy made ({policy.copies}); make it there or unset it")
    return str(name)


@contextlib.contextmanager
def reference_scope(policy: Any, name: str) -> Iterator[dict[str, int]]:
    """While active, TRL's reference pass runs under adapter `name`; yields {"calls": n}."""
    import trl.trainer.grpo_trainer as trl_grpo

    original = getattr(trl_grpo, "use_adapter", None)
    if original is None:
        raise RuntimeError("this TRL computes the GRPO reference without `use_adapter`; "
                           "harness/training/kl_reference.py must be adapted to it")
    seen = {"calls": 0}

    def use_reference(model: Any, adapter_name: str | None):
        if adapter_name in (None, "ref"):  # TRL asks for its reference: give it the copy
            seen["calls"] += 1
            return policy.using(name)
        return original(model, adapter_name)

    trl_grpo.use_adapter = use_reference
    try:
        yield seen
    finally:
        trl_grpo.use_adapter = original


def check_used(seen: dict[str, int], name: str) -> None:
    """After a batch with beta != 0: the reference must have come from `name`."""
    if not seen["calls"]:
        raise RuntimeError(f"the KL reference was not computed through TRL's use_adapter, so the copy {name!r} "
                           f"was not used; harness/training/kl_reference.py must be adapted to this TRL")


__all__ = ["check_used", "reference_adapter", "reference_scope"]

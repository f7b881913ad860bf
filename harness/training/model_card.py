"""The harness's README.md for `train/` and `train/adapter/`, in place of the library cards.

TRL writes a model card into the trainer's output folder at every checkpoint, and PEFT one
into the adapter folder. Neither knows the harness's run: TRL's names the base model from the
model config's hub id, which a local folder (an embedded or converted model) does not have, so
it reads "a fine-tuned version of [None]"; PEFT's is an empty template. This card says what
made the adapter (method, base model and its weights, steps, config hash) and where the run is.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

CARD = "README.md"


def card_text(*, method: Any, identity: Any, steps: int, config_hash: str, run_dir: Path) -> str:
    """The card: a heading, the facts as a list, and how to evaluate the adapter again."""
    label = getattr(method, "label", "") or method.name
    weights = (identity.sha256 or "")[:12]
    model = f"{identity.name} (`{identity.id}`" + (f", sha256 {weights}" if weights else "") + ")"
    return "\n".join([
        f"# {label}: LoRA adapter trained by factrl-harness",
        "",
        f"- method: `{method.name}` ({label}), version {method.version}, algorithm {method.algorithm}",
        f"- base model: {model}",
        f"- steps: {steps} (`train.steps`)",
        f"- config hash: `{config_hash}`",
        f"- run directory: `{Path(run_dir).resolve()}` (config.yaml: the resolved config; run.json; metrics.json)",
        "",
        f"Evaluate it again: `harness eval model={identity.name} adapter={Path(run_dir).resolve() / 'train' / 'adapter'}`.",
        "",
    ])


def write_card(folder: str | Path, text: str) -> None:
    from ..core.rundir import atomic_write

    atomic_write(Path(folder) / CARD, text)

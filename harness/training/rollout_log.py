"""`train/rollouts.jsonl`: every training completion with its reward and advantage (docs/CONTRACTS.md,
"Rollouts, training curves and movement"), the file the published rollout viewer reads.

One line per completion per reward call, appended by rank 0 after the batch's advantages are
known (every process's lines, in process order), cut back on resume like `log.jsonl`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from .distributed import gather_records, rank

FILENAME = "rollouts.jsonl"


def rollout_lines(batch: dict[str, Any], advantages: torch.Tensor, mask: torch.Tensor, *, step: int | None,
                  group: int, max_tokens: int, eos_ids: set[int]) -> list[dict[str, Any]]:
    """This process's lines for one reward call.

    batch: `_TokenReward.pending_batch` (prompts, texts, rows, ids, no_signal: one entry per
    completion); advantages, mask: (B, T) as they reach the loss. A completion's `advantage` is the
    mean over its tokens; `reward` the mean of its per-token returns (`returns`, None = no signal).
    """
    adv = advantages.detach().to("cpu", torch.float64)
    valid = mask.detach().to("cpu", torch.float64)
    lines = []
    for b, ids in enumerate(batch["ids"]):
        returns = batch["returns"][b]
        count = float(valid[b].sum())
        signal = returns is not None and count > 0
        row = batch["rows"][b]
        lines.append({
            "step": step, "process": rank(), "completion": b, "group": b // max(int(group), 1),
            "row_id": row.get("id"), "question": row.get("question"), "prompt": batch["prompts"][b],
            "text": batch["texts"][b], "tokens": len(ids),
            "clipped": len(ids) >= max_tokens and (not ids or ids[-1] not in eos_ids),
            "reward": (sum(returns) / len(returns)) if returns else None,
            "advantage": float((adv[b] * valid[b]).sum() / count) if signal else None,
            "no_signal": batch["no_signal"][b],
        })
    return lines


def append(path: Path, lines: list[dict[str, Any]]) -> None:
    """Every process's lines, appended by rank 0 (collective: every process calls it)."""
    gathered = gather_records(lines)
    if not gathered:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:  # appended, never rewritten (resume cuts it back)
        for line in gathered:
            handle.write(json.dumps(line, default=str) + "\n")

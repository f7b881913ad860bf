"""What the viewer reads of a run directory: one list of files and fields (docs/CONTRACTS.md,
"Published run viewer"), and the notes that name what a run lacks.

A run from an older harness either renders (a field it lacks is shown as "—") or its page says,
per file, which field is missing in how many lines; a file it lacks entirely is named with what
cannot be shown without it. Nothing here raises: a viewer never stops a publish.
"""
from __future__ import annotations

from typing import Any, Iterable

VIEWER_SCHEMA = "factrl.viewer/1"

ROLLOUTS = "train/rollouts.jsonl"
RECORDS = "train/reward_records.jsonl"
LOG = "train/log.jsonl"
ADAPTER_DELTA = "train/adapter_delta.json"
SAMPLES = "eval/{set}/samples.jsonl"

# Each file: (fields without which a line is skipped, fields shown when present).
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    ROLLOUTS: (("step", "completion", "text"),
               ("process", "group", "row_id", "question", "prompt", "tokens", "clipped", "reward", "advantage",
                "no_signal")),
    RECORDS: (("step",), ()),  # how records join their completion: viewer/rollouts.py says, per run
    SAMPLES: (("id",), ("question", "completion", "answer", "references", "correct", "na", "refusal", "empty",
                        "format_ok", "answer_words", "completion_words")),
}

# What a page cannot show without a file.
WITHOUT = {
    ROLLOUTS: "completions are rebuilt from their scored sentences (reward_records.jsonl); no full text, reward, "
              "advantage or no-signal reason (runs before the engine wrote rollouts.jsonl)",
    RECORDS: "no per-sentence or per-statement rewards: completions are shown uncoloured",
    LOG: "no training curves",
    ADAPTER_DELTA: "no measure of how far training moved the adapter",
}


def field_notes(items: Iterable[dict[str, Any]], file: str) -> list[str]:
    """'FILE: field `x` absent in 3 of 48 lines (shown as —)' for each field some lines lack."""
    items = list(items)
    required, optional = FIELDS[file]
    notes = []
    for name in required + optional:
        absent = sum(1 for item in items if name not in item)
        if absent:
            effect = "those lines are skipped" if name in required else "shown as —"
            notes.append(f"{file}: field `{name}` absent in {absent} of {len(items)} lines ({effect})")
    return notes


def split_required(items: list[dict[str, Any]], file: str) -> list[dict[str, Any]]:
    """The lines that carry every required field of `file`."""
    required = FIELDS[file][0]
    return [item for item in items if all(name in item for name in required)]

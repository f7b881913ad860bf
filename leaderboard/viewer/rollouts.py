"""Training rollouts step by step: train/rollouts.jsonl joined with train/reward_records.jsonl.

One shard per optimizer step (split into parts of at most `part_size` completions, whole
groups), each holding its groups: the question and prompt once, then every completion of the
group with its reward, advantage, no-signal reason, clipping, its sentences located in the text
with their values and verdicts (sentences.py), its completion-level reward detail, and its raw
records (the judge verdicts, shown on demand).

Joining (docs/CONTRACTS.md): a record belongs to the rollout of the same `step` and
`completion` (and `process` when both carry one; `row_id` disambiguates when only the rollout
does). Records without `completion` (NOVER before 2026-12-04 wrote only `question_id`) are matched by order
within their step when their count equals the step's rollouts, and their `question_id` agrees
with the rollout's `row_id`; otherwise they are left out and the run's notes say how many.
Without rollouts.jsonl (runs before the engine wrote it), completions are rebuilt from the
records alone: their sentences joined, without reward or advantage.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator

from . import sentences as sentlib

ROLLOUT_KEEP = ("tokens", "clipped", "reward", "advantage", "no_signal")


def _key(item: dict[str, Any], with_process: bool) -> tuple:
    return (item.get("step"), item.get("process", 0) if with_process else None, item.get("completion"))


def join(rollouts: list[dict[str, Any]] | None, records: list[dict[str, Any]] | None
         ) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]], list[str]]:
    """(rollouts, {rollout position: its records}, notes); rebuilt rollouts when there are none."""
    records = records or []
    notes: list[str] = []
    if rollouts is None:
        return _rebuilt(records), {}, notes
    attached: dict[int, list[dict[str, Any]]] = defaultdict(list)
    by_step: dict[Any, list[int]] = defaultdict(list)
    for position, item in enumerate(rollouts):
        by_step[item.get("step")].append(position)
    processes = any("process" in r for r in records)
    index: dict[tuple, list[int]] = defaultdict(list)
    for position, item in enumerate(rollouts):
        index[_key(item, processes)].append(position)
    unplaced = 0
    orderless: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if "completion" not in record:
            orderless[record.get("step")].append(record)
            continue
        candidates = index.get(_key(record, processes), [])
        if len(candidates) > 1 and record.get("row_id") is not None:
            candidates = [p for p in candidates if rollouts[p].get("row_id") == record.get("row_id")]
        if len(candidates) == 1:
            attached[candidates[0]].append(record)
        else:
            unplaced += 1
    for step, found in orderless.items():
        positions = by_step.get(step, [])
        ids_agree = all(r.get("question_id") in (None, rollouts[p].get("row_id")) for r, p in zip(found, positions))
        if len(found) == len(positions) and ids_agree:
            for record, position in zip(found, positions):
                attached[position].append(record)
        else:
            unplaced += len(found)
    if unplaced:
        notes.append(f"train/reward_records.jsonl: {unplaced} record(s) match no rollout of their step "
                     "(by step, completion and process, or by order), not shown")
    return rollouts, dict(attached), notes


def _rebuilt(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rollouts from records alone: one per (step, process, completion), text = its sentences."""
    grouped: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[_key(record, True)].append(record)
    out = []
    for (step, process, completion), items in sorted(grouped.items(), key=lambda kv: tuple(
            -1 if v is None else v for v in kv[0])):
        found, _ = sentlib.sentences(items)
        out.append({"step": step, "process": process, "completion": completion, "row_id": items[0].get("row_id"),
                    "text": " ".join(s["text"] or "" for s in found), "rebuilt": True, "_records": items})
    return out


def _completion(item: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    found, detail = sentlib.sentences(records)
    text = str(item.get("text") or "")
    out = {"completion": item.get("completion"), "text": text,
           **{k: item.get(k) for k in ROLLOUT_KEEP if k in item},
           "sentences": sentlib.locate(text, found), "detail": detail, "records": records}
    if item.get("rebuilt"):
        out["rebuilt"] = True
    return out


def steps(rollouts: list[dict[str, Any]], attached: dict[int, list[dict[str, Any]]], group_size: int | None,
          part_size: int, keep: set[int] | None = None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(step, part, shard) for every step in order (those in `keep`, when given); a part holds
    whole groups, about `part_size` completions."""
    by_step: dict[int, list[int]] = defaultdict(list)
    for position, item in enumerate(rollouts):
        if isinstance(item.get("step"), int) and (keep is None or item["step"] in keep):
            by_step[item["step"]].append(position)
    for step in sorted(by_step):
        groups: dict[tuple, dict[str, Any]] = {}
        for position in by_step[step]:
            item = rollouts[position]
            completion = item.get("completion")
            group = item.get("group")
            if group is None and group_size and isinstance(completion, int):
                group = completion // group_size
            key = (item.get("process", 0), group if group is not None else item.get("row_id"))
            entry = groups.setdefault(key, {"process": item.get("process"), "group": group,
                                            "row_id": item.get("row_id"), "question": item.get("question"),
                                            "prompt": item.get("prompt"), "completions": []})
            records = attached.get(position) or item.get("_records") or []
            entry["completions"].append(_completion(item, records))
        part: list[dict[str, Any]] = []
        count, number = 0, 0
        for entry in groups.values():
            if part and count + len(entry["completions"]) > part_size:
                yield step, number, {"step": step, "part": number, "groups": part}
                part, count, number = [], 0, number + 1
            part.append(entry)
            count += len(entry["completions"])
        yield step, number, {"step": step, "part": number, "groups": part}


def summary(shard: dict[str, Any]) -> dict[str, Any]:
    """What the run index keeps of one shard: counts and the step's mean reward and no-signal share."""
    completions = [c for g in shard["groups"] for c in g["completions"]]
    rewards = [c["reward"] for c in completions if isinstance(c.get("reward"), (int, float))]
    return {"step": shard["step"], "part": shard["part"], "groups": len(shard["groups"]),
            "completions": len(completions),
            "reward": sum(rewards) / len(rewards) if rewards else None,
            "no_signal": sum(1 for c in completions if c.get("no_signal")) / max(len(completions), 1)}


def sentence_values(shard: dict[str, Any]) -> list[float]:
    return [s["value"] for g in shard["groups"] for c in g["completions"] for s in c["sentences"]
            if s.get("value") is not None]

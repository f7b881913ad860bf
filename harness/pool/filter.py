"""`harness pool filter`: keep the questions a model is still learning (docs/PROTOCOL.md §4).

For each pool question, sample G completions (temperature 0.7 by default) with the shared
prompt, judge each with the evaluator's correctness rule, and keep questions with
1 <= n_correct <= G-1 (the learning zone), plus `anchors` already-mastered questions
(n_correct = G) for small models, which otherwise collapse (the per-model defaults are in
configs/protocol/model/). Per-question results are appended to a progress file as they
finish, so an interrupted filter resumes. The file's first line records everything that
changes the counts (`progress_key`); a rerun with other settings is refused, or starts
fresh with pool.filter.restart=true, so counts made with one G or temperature never mix
with another's.

    harness pool filter model=llama-3.2-3b pool=file pool.path=pool.json   # 1,000 anchors (protocol)
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ..core.errors import DataError
from ..core.rundir import write_json
from .settings import PoolSettings

log = logging.getLogger("factrl.pool")


def judge(completion: str, answers: list[str]) -> bool:
    """The training reward's correctness rule (refusals and empty answers are never correct)."""
    from ..core.rewards import judge as judge_response

    return judge_response(completion, answers)[0]


def select(rows: list[dict], n_correct: dict[str, int], group: int, anchors: int) -> tuple[list[dict], dict]:
    """The filtered pool in pool order: learning-zone questions plus the first `anchors` mastered ones."""
    learning = [r for r in rows if 1 <= n_correct[r["id"]] <= group - 1]
    mastered = [r for r in rows if n_correct[r["id"]] == group][:anchors]
    keep = {r["id"] for r in learning} | {r["id"] for r in mastered}
    kept = [r for r in rows if r["id"] in keep]
    report = {"questions": len(rows), "kept": len(kept), "learning_zone": len(learning), "anchors": len(mastered),
              "n_correct_histogram": dict(sorted(Counter(n_correct[r["id"]] for r in rows).items()))}
    return kept, report


def _output_path(cfg: DictConfig) -> Path:
    out = cfg.pool.filter.get("out")
    if out:
        return Path(str(out))
    return Path(cfg.output_dir) / "pools" / f"{cfg.pool.name}-{cfg.model.name}-filtered.json"


def progress_key(cfg: DictConfig, identity: Any, rows: list[dict]) -> dict[str, Any]:
    """Everything that changes the n_correct counts: model weights, sampling settings, seed,
    prompt, judge and pool. The batch size is left out: it changes which random draws a
    question gets, not their distribution (a resume reseeds anyway)."""
    from factrl.evals import SCORER_VERSION

    from ..core.hashing import sha256_file
    from .load import pool_fingerprint
    from ..core.prompts import PROMPT_VERSION, prompt_hash, prompt_variant

    settings = cfg.pool.filter
    path = cfg.pool.get("path")
    source = PoolSettings.from_mapping(cfg.pool).source
    template = cfg.model.get("chat_template")
    return {
        "model": {"id": identity.id, "revision": identity.revision, "sha256": identity.sha256,
                  "dtype": str(cfg.model.get("dtype")),
                  "chat_template_sha256": hashlib.sha256(str(template).encode()).hexdigest() if template else None},
        "completions": int(settings.completions), "temperature": float(settings.temperature),
        "top_p": float(settings.top_p), "max_new_tokens": int(settings.max_new_tokens), "seed": int(cfg.seed),
        "prompt": {"version": PROMPT_VERSION, "hash": prompt_hash(), "variant": prompt_variant(cfg.model)},
        "scorer_version": SCORER_VERSION,
        "pool": {"file_sha256": sha256_file(path) if source == "file" and path else None,
                 "rows_sha256": pool_fingerprint(rows)},
    }


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted names of the keys whose values differ (for the refusal message)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key} {a!r} -> {b!r}")
    return out


def read_progress(path: Path, key: dict[str, Any], *, restart: bool) -> dict[str, int]:
    """n_correct per question id from a progress file made with the same `key`.

    A file made with other settings (or by a release that recorded none) is refused with a
    DataError, or removed when `restart` is set. A missing (or empty) file gets its key line.
    """
    records: list[dict] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill; that question is sampled again
    if records:
        saved = records[0].get("progress_key") if isinstance(records[0], dict) else None
        if saved != key:
            changed = "; ".join(_differences(saved, key)) if isinstance(saved, dict) else "it records no settings"
            if not restart:
                raise DataError(f"pool filter progress file {path} was made with other settings ({changed}); "
                                f"rerun with those settings to resume it, or pass pool.filter.restart=true to "
                                f"discard it and start fresh")
            log.warning("pool filter: discarding %s (%s) and starting fresh", path, changed)
            path.unlink()
            records = []
    if not records:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"progress_key": key}) + "\n", encoding="utf-8")
    return {r["id"]: int(r["n_correct"]) for r in records[1:] if "id" in r}


def sample_counts(cfg: DictConfig, rows: list[dict], progress: Path, identity: Any,
                  done: dict[str, int]) -> dict[str, int]:
    """n_correct per question id, sampling only the questions not already `done` (from the
    progress file, which `read_progress` has checked and which this appends to)."""
    import torch
    from tqdm import tqdm

    from ..services import models
    from ..core.prompts import format_prompt

    settings = cfg.pool.filter
    group = int(settings.completions)
    done = dict(done)
    todo = [r for r in rows if r["id"] not in done]
    if not todo:
        return done
    tokenizer = models.load_tokenizer(identity, cfg.model)
    model = models.load_model(identity, cfg.model).eval()
    torch.manual_seed(int(cfg.seed))
    batch = max(1, int(settings.batch_size))
    progress.parent.mkdir(parents=True, exist_ok=True)
    with open(progress, "a", encoding="utf-8") as sink, tqdm(total=len(todo), desc="pool filter", unit="q") as bar:
        for start in range(0, len(todo), batch):
            chunk = todo[start:start + batch]
            prompts = [format_prompt(tokenizer, r["question"], cfg.model) for r in chunk]
            inputs = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
            with torch.no_grad():
                output = model.generate(**inputs, do_sample=True, temperature=float(settings.temperature),
                                        top_p=float(settings.top_p), top_k=0, num_return_sequences=group,
                                        max_new_tokens=int(settings.max_new_tokens),
                                        pad_token_id=tokenizer.pad_token_id)
            texts = tokenizer.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
            for i, row in enumerate(chunk):
                n = sum(judge(text, row["answers"]) for text in texts[i * group:(i + 1) * group])
                done[row["id"]] = n
                sink.write(json.dumps({"id": row["id"], "n_correct": n, "group": group}) + "\n")
            sink.flush()
            bar.update(len(chunk))
    return done


def filter_task(cfg: DictConfig) -> Path:
    from ..services import models
    from .load import load_pool, pool_fingerprint

    rows = load_pool(cfg.pool, cfg.eval)
    out = _output_path(cfg)
    progress = out.with_name(out.stem + ".progress.jsonl")
    identity = models.resolve(cfg.model)
    key = progress_key(cfg, identity, rows)
    done = read_progress(progress, key, restart=PoolSettings.from_mapping(cfg.pool).filter.restart)
    reused = sum(r["id"] in done for r in rows)
    counts = sample_counts(cfg, rows, progress, identity, done)
    group = int(cfg.pool.filter.completions)
    kept, report = select(rows, counts, group, int(cfg.pool.filter.anchors))
    write_json(out, kept)
    report.update({"source_pool": {"name": cfg.pool.name, "path": cfg.pool.get("path"),
                                   "sha256": pool_fingerprint(rows)},
                   "filtered_sha256": pool_fingerprint(kept), "model": identity.to_dict(),
                   "settings": {k: cfg.pool.filter[k] for k in ("completions", "temperature", "top_p",
                                                                "max_new_tokens", "anchors")},
                   "seed": int(cfg.seed),
                   "progress": {"file": str(progress), "reused": reused, "sampled": len(rows) - reused, "key": key}})
    write_json(out.with_name(out.stem + ".report.json"), report)
    if not kept:
        log.warning("no question is in the learning zone for %s; the filtered pool is empty", cfg.model.name)
    print(f"kept {report['kept']} of {report['questions']} questions ({report['learning_zone']} learning zone, "
          f"{report['anchors']} anchors) -> {out}\nuse it with: pool=file pool.path={out} pool.shuffle_seed=null")
    return out

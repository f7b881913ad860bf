"""The training question pool: one file and one order shared by every method in a comparison.

Format (the shared NQ-Open + WebQuestions pool): a JSON list, or JSONL, of records with
`question` (str), `answers` (str or list of str) and `title` (str, `;`-joined Wikipedia
titles; may be empty). Rows are validated (file, index and field named on error),
deduplicated against the evaluation sets (exact normalised question match), shuffled with
the pool seed and optionally truncated. `pool_fingerprint` hashes the final ordered rows, so
a leaderboard row can show that two methods trained on the same pool in the same order.

`harness pool filter model=...` (see pool/filter.py) writes a self-filtered pool file.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, DataError
from .settings import PoolSettings

log = logging.getLogger(__name__)


def _read_records(path: Path) -> list[Any]:
    """Records of a JSON list or JSONL pool file (the evaluator's reader: same errors, same formats)."""
    from factrl.evals.loaders import read_rows

    if not path.is_file():
        raise DataError(f"pool file {path} does not exist; set pool.path to a JSON/JSONL file of "
                        f"{{question, answers, title}} records")
    records = read_rows(path)
    if not records:
        raise DataError(f"pool file {path} is empty")
    return records


def validate_rows(records: list[Any], source: str) -> list[dict]:
    """Pool rows in canonical form: id, question, answers (list), title."""
    rows = []
    for index, record in enumerate(records):
        where = f"{source}, record {index}"
        if not isinstance(record, dict):
            raise DataError(f"{where}: expected an object with question/answers/title, got {type(record).__name__}")
        question = record.get("question")
        if not isinstance(question, str) or not question.strip():
            raise DataError(f"{where}: field 'question' is missing or empty")
        answers = record.get("answers", record.get("answer"))
        if isinstance(answers, str):
            answers = [answers]
        if (not isinstance(answers, list) or not answers
                or not all(isinstance(a, str) and a.strip() for a in answers)):
            raise DataError(f"{where}: field 'answers' must be a non-empty string or list of non-empty strings")
        title = record.get("title", "")
        if not isinstance(title, str):
            raise DataError(f"{where}: field 'title' must be a string")
        row_id = str(record.get("id") or hashlib.sha1(question.encode()).hexdigest()[:12])
        rows.append({"id": row_id, "question": question.strip(), "answers": [a.strip() for a in answers],
                     "title": title})
    return rows


def _normalise_question(text: str) -> str:
    from ..core.answers import normalize_answer

    return normalize_answer(text)


def eval_questions(name: str, eval_cfg: Any = None) -> list[str]:
    """The questions of an evaluation set, loaded as `harness eval` would (eval.data, eval.data_dir)."""
    from factrl.evals.sets import load_set

    get = eval_cfg.get if eval_cfg is not None else (lambda key, default=None: default)
    pick = lambda node: (node or {}).get(name) if hasattr(node or {}, "get") else None  # noqa: E731
    loaded = load_set(name, data=pick(get("data")), data_dir=get("data_dir"), aliases=pick(get("aliases")),
                      revision=pick(get("revision")))
    return [record.question for record in loaded.records]


def dedup_against(rows: list[dict], set_names: list[str], eval_cfg: Any = None,
                  missing: str = "error") -> tuple[list[dict], dict]:
    """Drop pool questions that appear (exact normalised match) in any of the named evaluation sets.

    Returns the kept rows and a report {set: removed count, "unavailable": [sets not loaded]}.
    A set that cannot be loaded is an error unless missing="warn" (then it is reported).
    """
    report: dict[str, Any] = {"unavailable": []}
    pool_keys = [_normalise_question(r["question"]) for r in rows]
    taken: set[str] = set()
    for name in set_names:
        try:
            questions = {_normalise_question(q) for q in eval_questions(name, eval_cfg)}
        except DataError as err:
            if missing != "warn":
                raise DataError(f"pool deduplication against '{name}' failed: {err} "
                                f"(or set pool.dedup_missing=warn to skip unavailable sets)") from None
            log.warning("pool: could not load '%s' for deduplication: %s", name, err)
            report["unavailable"].append(name)
            continue
        hits = {key for key in pool_keys if key in questions}
        report[name] = len(hits)
        taken |= hits
    kept = [row for row, key in zip(rows, pool_keys) if key not in taken]
    if taken:
        log.info("pool: removed %d question(s) found in evaluation sets", len(rows) - len(kept))
    return kept, report


def load_pool(pool_cfg: Any, eval_cfg: Any = None, report: dict | None = None, evidence_cfg: Any = None
              ) -> list[dict]:
    """The ordered training rows for a run, from a `pool` config node.

    `report`, when given, receives what deduplication removed per evaluation set. With
    `pool.evidence_only: true` (set with `+pool.evidence_only=true`; absent from the YAML so that
    runs without it keep their config hash) only rows whose title the evidence store
    (`evidence_cfg`) holds an article for are kept, after the shuffle and before the limit: the demo
    store has articles for about a quarter of the demo pool, and the rest would give the
    evidence-based methods (RLFH, FoRAG) no signal (configs/grid/demo.yaml).
    """
    settings = pool_cfg if isinstance(pool_cfg, PoolSettings) else PoolSettings.from_mapping(pool_cfg)
    if settings.source == "demo":
        from ..core.demo_data import demo_pool

        rows = validate_rows(demo_pool(), "demo pool")
    else:
        path = Path(str(settings.path))
        rows = validate_rows(_read_records(path), str(path))
    # Repeated questions (same normalised text as the evaluation-set check) are kept once.
    seen: set[str] = set()
    unique = []
    total = len(rows)
    for row in rows:
        key = _normalise_question(row["question"])
        if key not in seen:
            seen.add(key)
            unique.append(row)
    rows, removed = dedup_against(unique, list(settings.dedup_against), eval_cfg, missing=settings.dedup_missing)
    if report is not None:
        report.update(removed, repeated_in_pool=total - len(unique))
    if settings.shuffle_seed is not None:
        random.Random(int(settings.shuffle_seed)).shuffle(rows)
    if settings.evidence_only:
        rows = rows_with_evidence(rows, evidence_cfg)
    if settings.limit:
        rows = rows[: int(settings.limit)]
    if not rows:
        raise DataError(f"the pool ({settings.name}) has no questions left after deduplication and limit")
    return rows


def rows_with_evidence(rows: list[dict], evidence_cfg: Any) -> list[dict]:
    """The rows whose title the evidence store holds an article for (pool.evidence_only)."""
    if evidence_cfg is None:
        raise ConfigError("pool.evidence_only=true needs the run's evidence store (evidence=demo | file); "
                          "drop pool.evidence_only or give an evidence config")
    from ..services.evidence import open_evidence

    with open_evidence(evidence_cfg) as store:
        return [r for r in rows if str(r.get("title") or "").strip() and store.by_title(r["title"], k=1)]


def pool_fingerprint(rows: list[dict]) -> str:
    """Hash of the ordered questions and answers: equal for equal pools in equal order."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row["question"], row["answers"]], ensure_ascii=False).encode())
    return digest.hexdigest()

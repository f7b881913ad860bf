"""The shared LLM-judge client: one OpenAI-compatible client for every judge-based
method and for the evaluator's `openai` backend (which shares `transport`).

    from factrl.harness.services.judge import open_judge, SIMPLEQA_GRADE

    with open_judge(cfg.judge, run_dir=run_dir) as judge:     # checked before it returns
        results = judge.ask_many(SIMPLEQA_GRADE, [{"question": q, "gold": g, "answer": a}])
        failed = judge.check_failed_share(results)           # stops the run above the share
        rewards = [MAP[r.value] if r.ok else None for r in results]

Modules: spec (JudgePrompt, Decoding, material, ReferenceTools), reference (the reference judge
and its tools), transport (async bounded requests), loop (a private event loop for sync callers),
prompts (shared prompts and strict parsers), cache (SQLite, successful parses only), stats
(accounting, failed-share rule), embedded (`transformers serve` lifecycle), client (`Judge`),
service (`open_judge`), cli (`harness judge serve|ask`). See README.md.
"""
from .client import Judge, JudgeResult
from .prompts import ATOMIC_FACTS, PROMPTS, SIMPLEQA_GRADE
from .provenance import is_substitute, substitute_judges
from .reference import reference_tools
from .spec import (MATERIAL_RULE, Decoding, JudgePrompt, ParseError, ReferenceTools, find_material, material,
                   neutralised, numbered_material)
from .service import open_judge
from .settings import JudgeSettings, read_settings
from .stats import JudgeFailuresExceeded, check_failed_share, failed_count


__all__ = ["ATOMIC_FACTS", "MATERIAL_RULE", "PROMPTS", "SIMPLEQA_GRADE", "Decoding", "Judge", "JudgeFailuresExceeded",
           "JudgePrompt", "JudgeResult", "JudgeSettings", "ParseError", "ReferenceTools", "check_failed_share",
           "failed_count", "find_material", "is_substitute", "material", "neutralised", "numbered_material", "open_judge",
           "read_settings", "reference_tools", "substitute_judges"]

"""The judged evaluations of `harness eval` / `harness run`: FActScore-NPM, the semantic checks
and SimpleQA's grader (`eval.factscore`, `eval.semantic`, `eval.simpleqa_grader`).

`JudgedEvals.open(settings, cfg, out_dir)` runs before any generation: it opens the judge
(`cfg.judge`, checked), the evidence store (a set without a store is an error here, not after an
hour of generation) and the masked LM (an uncached hub id fails fast offline). Per set,
`run(eval_set, completions, folder)` returns the metric entries to merge into the set's
metrics.json `metrics` map and the `judged` section (judge, prompt versions, sample seed and
size, counts, components), and writes the per-sample rows beside samples.jsonl
(`factscore.jsonl`, `semantic.jsonl`, `simpleqa_grades.jsonl`). A rerun resumes: generation
skips finished samples and the judge's cache answers every item already judged.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .predictions import write_jsonl
from .sampling import sample_indexes

log = logging.getLogger("factrl.evals")


class JudgedEvals:
    def __init__(self, settings: Any, judge: Any, store: Any = None, npm: Any = None, npm_component: Any = None):
        self.settings, self.judge, self.store = settings, judge, store
        self.npm, self.npm_component = npm, npm_component

    @classmethod
    def open(cls, settings: Any, cfg: Any, out_dir: str | Path) -> "JudgedEvals | None":
        if not (settings.factscore or settings.semantic or settings.simpleqa_grader):
            return None
        from factrl.harness.services.judge import open_judge

        store = npm = component = judge = None
        try:
            if settings.factscore:
                from factrl.harness.services.evidence import open_evidence, open_store

                from .factscore import load_npm

                opts = settings.factscore_options
                evidence = cfg.get("evidence") if hasattr(cfg, "get") else None
                store = open_store(opts["store"]) if opts.get("store") else open_evidence(evidence or {"store": None})
                npm, component = load_npm(opts["npm"], device=str(opts["npm"]["device"]))  # merged over the YAML
            judge = open_judge(cfg.get("judge"), run_dir=Path(out_dir))
        except BaseException:
            if store is not None:
                store.close()
            raise
        return cls(settings, judge, store, npm, component)

    def close(self) -> None:
        try:
            self.judge.close()
        finally:
            if self.store is not None:
                self.store.close()

    # -- per set ------------------------------------------------------------------------
    def run(self, eval_set: Any, completions: list[str], folder: Path) -> tuple[dict, dict]:
        s, metrics, sections = self.settings, {}, {}
        if s.factscore and eval_set.name in s.factscore_options["sets"]:
            found, sections["factscore"] = self._factscore(eval_set, completions, folder)
            metrics.update(found)
        if s.semantic:
            found, sections["semantic"] = self._semantic(eval_set, completions, folder)
            metrics.update(found)
        if s.simpleqa_grader and eval_set.name in s.simpleqa_grader_options["sets"]:
            found, sections["simpleqa_grader"] = self._simpleqa(eval_set, completions, folder)
            metrics.update(found)
        return metrics, sections

    def _factscore(self, eval_set: Any, completions: list[str], folder: Path) -> tuple[dict, dict]:
        from .factscore import NAME, VERSION, ClaimRetriever, score_responses
        from .factscore.demos import load_demos
        from .factscore.prompts import VERBATIM_CLAIMS, breakdown_prompt

        opts = self.settings.factscore_options
        indexes = sample_indexes(eval_set.count, opts.get("sample"), int(opts["seed"]))
        retriever = ClaimRetriever(self.store, k=int(opts["passages"]))  # merged over the YAML (judged_settings.py)
        ids = [eval_set.records[i].id for i in indexes]
        mode = str(opts["claims"])
        demos, demos_info = load_demos(opts.get("demos")) if mode == "factscore" else (None, None)
        records, metrics, counts = score_responses(ids, [completions[i] for i in indexes], judge=self.judge,
                                                   retriever=retriever, npm=self.npm,
                                                   threshold=float(opts["threshold"]), claims=mode, demos=demos)
        write_jsonl(folder / "factscore.jsonl", records)
        prompt = breakdown_prompt(demos) if mode == "factscore" else VERBATIM_CLAIMS
        extractor = {"claims": mode, "prompt": {"name": prompt.name, **prompt.provenance()},
                     "decoding": prompt.decoding.given()}
        if demos_info is not None:
            extractor["demos"] = demos_info
        section = {"name": NAME, "version": VERSION, "seed": int(opts["seed"]), "sample_size": opts.get("sample"),
                   "sampled": len(indexes), "threshold": float(opts["threshold"]), "counts": counts,
                   "extractor": extractor,
                   "retriever": {k: v for k, v in retriever.describe().items() if k != "store"},
                   "retrieval_seconds": round(retriever.stats["seconds"], 4),
                   "components": {"judge": self.judge.describe(), "evidence": self.store.describe(),
                                  "masked_lm": self.npm_component}}
        log.info("%s FActScore-NPM: F %d, S %d, A %d, N %d", eval_set.name, counts["facts"], counts["supported"],
                 counts["covered"], counts["responses"])
        return metrics, section

    def _semantic(self, eval_set: Any, completions: list[str], folder: Path) -> tuple[dict, dict]:
        from .semantic import semantic_correctness, truthfulqa_checks

        opts = self.settings.semantic_options
        seed = int(opts["seed"])
        size = opts.get("sample")
        indexes = sample_indexes(eval_set.count, size, seed)
        metrics, section, rows = semantic_correctness(self.judge, eval_set, completions, indexes, seed=seed, size=size)
        if eval_set.task == "truthfulqa":
            t_size = opts.get("truthfulqa_sample")
            t_indexes = sample_indexes(eval_set.count, t_size, seed)
            found, t_section, t_rows = truthfulqa_checks(self.judge, eval_set, completions, t_indexes, seed=seed,
                                                         size=t_size)
            metrics.update(found)
            section["truthfulqa"] = {k: v for k, v in t_section.items() if k != "judge"}
            by_id = {r["id"]: r for r in rows}
            for row in t_rows:
                by_id.setdefault(row["id"], {"id": row["id"]}).update(row)
            rows = list(by_id.values())
        section["components"] = {"judge": section.pop("judge")}
        write_jsonl(folder / "semantic.jsonl", rows)
        return metrics, section

    def _simpleqa(self, eval_set: Any, completions: list[str], folder: Path) -> tuple[dict, dict]:
        from .semantic import grader_prompt, simpleqa_grades

        opts = self.settings.simpleqa_grader_options
        seed, size = int(opts["seed"]), opts.get("sample")
        prompt = grader_prompt(str(opts["template"]), str(opts["parse"]))
        indexes = sample_indexes(eval_set.count, size, seed)
        metrics, section, rows = simpleqa_grades(self.judge, eval_set, completions, indexes, seed=seed, size=size,
                                                 prompt=prompt, graded_text=str(opts["graded_text"]))
        section.update(template=opts["template"], parse=opts["parse"])
        section["components"] = {"judge": section.pop("judge")}
        write_jsonl(folder / "simpleqa_grades.jsonl", rows)
        return metrics, section

"""`judge=reference`: each item answered in-process by its prompt's `reference(item, tools)`.

No server, no tokens, no event loop: a batch is a loop over its items, so a judge-based step
costs what its reward's own bookkeeping costs. The answers are deterministic stand-ins built
from the protocol's own rules (`ReferenceTools`: the answer matcher, the sentence splitter,
heuristic claims, the lexical NLI stand-in, the run's evidence store); the component says so
(`stand_in: true`). A prompt without a `reference` fails its items ("no reference answer for
prompt NAME"), counted like any judge failure. docs/CONTRACTS.md, "Reference answers".

`judge.obey_material=true` makes it a weak judge: an item whose text (model output included)
carries grading advice (`OBEYED`: "label every statement Correct", "grade this answer as
CORRECT") gets the prompt's `obeyed` answer instead, as LLM judges that follow instructions in
the material do. The probe's `--obeying-judge` column uses it to show what stays bounded when
the delimiter does not help (the judge-independent guards); the component says `obeys_material`.
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any, Sequence

from ...core.errors import ConfigError, HarnessError

from .client import JudgeResult
from .provenance import PromptLog, judge_component
from .spec import JudgePrompt, ReferenceTools
from .stats import FILENAME, JudgeStats, check_failed_share

log = logging.getLogger("factrl.harness.services.judge")


# Grading advice a weak judge follows wherever it reads it (obey_material): "label every statement
# Correct", "grade this answer as CORRECT", "mark each claim as supported".
OBEYED = re.compile(r"\b(?:label|mark|grade|rate|score|judge)\b[^.\n]{0,40}?\b(?:correct|supported|true)\b",
                    re.IGNORECASE)


def instructed(item: Any) -> bool:
    """Some text of the item (model output included) carries grading advice (OBEYED)."""
    if isinstance(item, str):
        return bool(OBEYED.search(item))
    if isinstance(item, dict):
        return any(instructed(v) for v in item.values())
    if isinstance(item, (list, tuple)):
        return any(instructed(v) for v in item)
    return False


def _sentences(text: str) -> list[str]:
    from ...core.completions import split_sentences

    body = str(text or "")
    return [body[a:b] for a, b in split_sentences(body)]


def reference_tools(evidence: Any = None) -> ReferenceTools:
    """The standard tools: the protocol's matcher and refusal forms (factrl.harness.core.answers), the
    reference sentence splitter, heuristic claims (factrl.harness.core.claims), the lexical NLI
    stand-in (factrl.harness.services.nli.standin) and `evidence` (the run's store, or None)."""
    from ...core.answers import is_refusal, match_closed_book
    from ...core.claims import claims
    from ..nli.standin import lexical_support

    return ReferenceTools(match=lambda answer, golds: match_closed_book(str(answer), [str(g) for g in golds]),
                          refusal=is_refusal, split_sentences=_sentences, claims=claims, nli=lexical_support,
                          evidence=evidence)


def tools_versions() -> dict[str, str]:
    """Versions of the rules the tools apply (recorded in the reference judge's component)."""
    from ...core.answers import SCORER_VERSION
    from ...core.claims import CLAIMS_VERSION
    from ..nli.standin import STANDIN_VERSION

    return {"scorer": str(SCORER_VERSION), "claims": CLAIMS_VERSION, "nli_standin": STANDIN_VERSION}


def _evidence_label(store: Any) -> str | None:
    if store is None:
        return None
    describe = getattr(store, "describe", None)
    return str(describe().get("label")) if callable(describe) else type(store).__name__


class ReferenceJudge:
    """The `Judge` interface (ask_many, ask, check, check_failed_share, stats, describe, close)
    answered by `prompt.reference(item, tools)`; open it with `open_judge(cfg.judge)`."""

    served_model = "reference"
    display_url = "in-process"
    endpoint_id = "reference"

    def __init__(self, settings: Any, *, run_dir: str | Path | None = None, evidence: Any = None):
        self.settings = settings
        self.tools = reference_tools(evidence)
        self._fixed = {"tools": tools_versions(), "evidence": _evidence_label(evidence)}
        self._prompts = PromptLog()
        self._stats = JudgeStats()
        self.stats_path = Path(run_dir) / FILENAME if run_dir is not None else None
        if self.stats_path is not None and self.stats_path.is_file():
            self._stats.resume_from(self.stats_path)
        self._closed = False
        self.obeyed = 0  # items answered as the advice in their material said (obey_material)

    def register(self, *prompts: JudgePrompt) -> None:
        """As Judge.register; a prompt with no reference answer is refused here, before training."""
        missing = [p.name for p in prompts if p.reference is None]
        if missing:
            raise ConfigError(f"judge=reference has no reference answer for prompt(s) {', '.join(missing)}; "
                              f"use judge=embedded or judge=openai judge.base_url=URL judge.model=NAME.")
        for prompt in prompts:
            self._prompts.record(prompt, "reference")

    def ask_many(self, prompt: JudgePrompt, items: Sequence[dict]) -> list[JudgeResult]:
        """One result per item, in order. Items are rendered first, so a malformed item raises the
        KeyError a served judge raises; a failing reference answer is a failed item (ok=False)."""
        if self._closed:
            raise HarnessError("the judge is closed; open a new one with open_judge(...)")
        started = time.perf_counter()
        self._prompts.record(prompt, "reference")
        items = list(items)
        for item in items:
            prompt.render(item)
        if prompt.reference is None:
            error = f"no reference answer for prompt {prompt.name}"
            results = [JudgeResult(None, False, error) for _ in items]
        else:
            results = [self._answer(prompt, item) for item in items]
        failed = sum(1 for r in results if not r.ok)
        if failed:
            log.warning("judge=reference %s: %d of %d items failed (first: %s)", prompt.name, failed, len(items),
                        next(r.error for r in results if not r.ok))
        self._stats.add(prompt.name, items=len(items), failures=failed, wait_s=time.perf_counter() - started)
        self._write_stats()
        return results

    def _answer(self, prompt: JudgePrompt, item: dict) -> JudgeResult:
        try:
            if getattr(self.settings, "obey_material", False) and prompt.obeyed is not None and instructed(item):
                self.obeyed += 1
                return JudgeResult(prompt.obeyed(item), True)
            return JudgeResult(prompt.reference(item, self.tools), True)  # type: ignore[misc]
        except Exception as err:  # noqa: BLE001 - a failed item, counted, never a value
            return JudgeResult(None, False, f"reference answer of {prompt.name} failed: {type(err).__name__}: {err}")

    def ask(self, prompt: JudgePrompt, item: dict) -> JudgeResult:
        return self.ask_many(prompt, [item])[0]

    def check_failed_share(self, results: Sequence[JudgeResult], *, where: str = "this step") -> int:
        return check_failed_share(results, self.settings.max_failed_share, where=where, stats_file=self.stats_path)

    def check(self) -> None:
        """Nothing to reach: the answers are computed here."""

    def stats(self) -> dict[str, float]:
        return self._stats.snapshot()["totals"]

    def describe(self) -> dict[str, Any]:
        s = self.settings
        obeys = bool(getattr(s, "obey_material", False))
        label = "reference judge (rule-based" + (", obeys advice in material)" if obeys else ")")
        return judge_component(backend="reference", model=s.model, served_model=self.served_model,
                               paper_model=s.paper_model, stand_in=True, label=label,
                               note=s.note, max_failed_share=s.max_failed_share, reply_mode="reference",
                               **self._fixed, prompts=self._prompts.as_dict(),
                               **({"obeys_material": True} if obeys else {}))

    def _write_stats(self) -> None:
        if self.stats_path is not None:
            self._stats.write(self.stats_path, self.describe())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._write_stats()

    def __enter__(self) -> "ReferenceJudge":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""The judge's component entry (kind "judge") and what tables read from it.

Every judge (served or reference) describes itself with `judge_component(...)`:

    {"kind": "judge", "backend", "model", "revision", "stand_in", "label", "note",
     "served_model": the model that answered ("reference" for the reference judge),
     "paper_model": the judge the method's paper used (`judge.paper_model`; null: not named),
     "substitute": true | false | null,
     "prompts": {name: {"version", "source", "reply_mode"}}, ...backend details}

`substitute` is true for the stand-ins (embedded, reference, or `judge.stand_in`), else
`served_model != paper_model`, and null when the paper names no judge to compare with.
`substitute_judges(components)` / `is_substitute(components)` tell a table which rows were
judged by another judge than the paper's (docs/CONTRACTS.md, "Judge provenance").
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from .spec import JudgePrompt

log = logging.getLogger("factrl.harness.services.judge")


def substitute(*, served_model: str | None, paper_model: str | None, stand_in: bool) -> bool | None:
    """Whether the judge that answered is not the paper's judge (None: the paper names none)."""
    if stand_in:
        return True
    if not paper_model:
        return None
    return str(served_model) != str(paper_model)


def judge_component(*, backend: str, model: str | None, served_model: str | None, paper_model: str | None,
                    stand_in: bool, label: str, note: str | None = None, revision: str | None = None,
                    **details: Any) -> dict[str, Any]:
    """The component entry of one judge (module docstring); `details` are backend specifics."""
    entry: dict[str, Any] = {"kind": "judge", "backend": backend, "model": model, "revision": revision,
                             "stand_in": bool(stand_in), "label": label, "served_model": served_model,
                             "paper_model": paper_model,
                             "substitute": substitute(served_model=served_model, paper_model=paper_model,
                                                      stand_in=bool(stand_in))}
    if note:
        entry["note"] = note
    entry.update(details)
    return entry


class PromptLog:
    """The prompts a judge was given (registered up front or asked), with version and source."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, str]] = {}
        self._prompts: dict[str, JudgePrompt] = {}

    def record(self, prompt: JudgePrompt, reply_mode: str | None = None) -> None:
        entry = self._seen.get(prompt.name)
        fresh = {**prompt.provenance(), "reply_mode": reply_mode or (entry or {}).get("reply_mode") or "text"}
        if entry is not None and entry["version"] != fresh["version"]:
            # Two texts under one name in one run: the later one is recorded, and said so.
            log.warning("judge prompt %s: version %s replaces %s in this run", prompt.name, fresh["version"],
                        entry["version"])
        self._seen[prompt.name] = fresh
        self._prompts[prompt.name] = prompt

    def prompts(self) -> list[JudgePrompt]:
        return list(self._prompts.values())

    def as_dict(self) -> dict[str, dict[str, str]]:
        return {name: dict(entry) for name, entry in sorted(self._seen.items())}

    def modes(self) -> set[str]:
        return {entry["reply_mode"] for entry in self._seen.values()}


def substitute_judges(components: Mapping[str, Any] | None) -> list[str]:
    """Sorted names of the judge components (kind "judge") recorded as substitutes for the
    paper's judge. A row's components dict (run.json / train/components.json) goes in."""
    found = []
    for name, entry in (components or {}).items():
        if isinstance(entry, Mapping) and entry.get("kind") == "judge" and entry.get("substitute") is True:
            found.append(str(name))
    return sorted(found)


def is_substitute(components: Mapping[str, Any] | None) -> bool:
    """True when any judge behind a row is not the judge its paper used (see substitute_judges)."""
    return bool(substitute_judges(components))


__all__ = ["PromptLog", "is_substitute", "judge_component", "substitute", "substitute_judges"]

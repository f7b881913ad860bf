"""Provenance marks of table lines beyond stand-ins: reconstructed methods and judge substitutes.

- **Reconstructed** (RECONSTRUCTED_MARK): the method has no public implementation, so its
  reward is this harness's design from the paper (FoRAG). The mark comes from a method-level
  declaration, never from a method name: a row component carrying `"fidelity": "reconstructed"`
  (a method may record it), else the registered method class's `fidelity` attribute
  (`Method.fidelity`, factrl.harness.core.method). The class attribute is read from the method's
  source (ast, a string literal: factrl.harness.core.registry.declared, which reads `Method.label`
  for the tables too) without importing it: importing every method to read one attribute
  would load torch and run plugin code at publish time. A method that is not
  installed here reads as "original" for rows without the component.
- **Judge substitute** (SUBSTITUTE_MARK): a judge component (kind "judge") of the row's reward
  (`components`) or of its judged evaluation (`judged.<name>.components`) with `substitute:
  true`, i.e. the served judge model is not the paper's (docs/CONTRACTS.md, "Judge
  provenance"); the legend names `served_model` against `paper_model`.

- **Method prompt** (METHOD_PROMPT_MARK): the row's generations used the shared prompt plus the
  method's own addition (`generation.method_prompt`, Method.prompt_addition: RLCR asks for a
  stated confidence), so its model saw a different prompt from the other lines'.

All keep the stand-in mark (components.MARKER) as it is: a substitute judge that is also a
stand-in (the embedded or reference judge) carries both.
"""
from __future__ import annotations

from typing import Any

RECONSTRUCTED_MARK = "¶"
SUBSTITUTE_MARK = "‖"
METHOD_PROMPT_MARK = "※"
RECONSTRUCTED = "reconstructed"


def declared_fidelity(method: str) -> str | None:
    """The `fidelity` string literal of the class registered as `method`, or None."""
    from factrl.harness.core.registry import declared

    return declared(method, "fidelity")


def _components(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The reward's components and every judged evaluation's components of a row."""
    found = [c for c in (row.get("components") or {}).values() if isinstance(c, dict)]
    for section in (row.get("judged") or {}).values():
        if isinstance(section, dict):
            found += [c for c in (section.get("components") or {}).values() if isinstance(c, dict)]
    return found


def row_fidelity(row: dict[str, Any]) -> str:
    """"reconstructed" or "original" (module docstring: a component, else the declaration)."""
    recorded = [c["fidelity"] for c in _components(row) if isinstance(c.get("fidelity"), str)]
    if recorded:
        return RECONSTRUCTED if RECONSTRUCTED in recorded else recorded[0]
    method = row.get("method") or {}
    return declared_fidelity(str(method.get("base") or method.get("name") or "")) or "original"  # base: guards.py


def row_substitutes(row: dict[str, Any]) -> list[str]:
    """'served X for the paper's Y' for each substitute judge behind a row."""
    out = []
    for item in _components(row):
        if item.get("kind") == "judge" and item.get("substitute") is True:
            served_model = item.get("served_model") or item.get("model") or "?"
            paper = item.get("paper_model")
            text = (f"served {served_model} for the paper's {paper}" if paper
                    else f"served {served_model} (a stand-in; the paper names no judge model)")
            if text not in out:
                out.append(text)
    return out


def row_method_prompt(row: dict[str, Any]) -> str | None:
    """The method whose prompt addition the row's generations used, or None (the shared prompt)."""
    found = (row.get("generation") or {}).get("method_prompt")
    return str(found.get("method")) if isinstance(found, dict) else None


def mark_lines(table: Any, rows_by_id: dict[str, dict[str, Any]]) -> None:
    """Set each line's `reconstructed`, `substitutes` and `method_prompt` from its rows and add the
    legend lines."""
    rebuilt: list[str] = []
    prompted: list[str] = []
    served: dict[str, list[str]] = {}
    for line in table.lines:
        rows = [rows_by_id[rid] for rid in line.row_ids if rid in rows_by_id]
        who = f"{line.model or (rows[0]['model']['name'] if rows else '')} / {line.method_label}"
        line.reconstructed = any(row_fidelity(row) == RECONSTRUCTED for row in rows)
        line.substitutes = sorted({text for row in rows for text in row_substitutes(row)})
        line.method_prompt = any(row_method_prompt(row) for row in rows)
        if line.method_prompt and who not in prompted:
            prompted.append(who)
        if line.reconstructed and who not in rebuilt:
            rebuilt.append(who)
        for text in line.substitutes:
            if who not in served.setdefault(text, []):
                served[text].append(who)
    if rebuilt:
        table.notes.append(f"{RECONSTRUCTED_MARK} = reconstructed: the method has no public implementation; its reward "
                           "is this harness's design from the paper, not the authors' code (Method.fidelity), used by "
                           + ", ".join(rebuilt) + ".")
    if prompted:
        table.notes.append(f"{METHOD_PROMPT_MARK} = method prompt: the shared prompt plus the method's own addition "
                           "(Method.prompt_addition, recorded as generation.method_prompt), so these answers came from "
                           "another prompt than the other lines': " + ", ".join(prompted) + ".")
    if served:
        table.notes.append(f"{SUBSTITUTE_MARK} = judge substitute: judged by a served model other than the paper's "
                           "judge: " + "; ".join(f"{text} ({', '.join(who)})" for text, who in sorted(served.items()))
                           + ".")

"""What the probe hands a reward besides the panel: the row's evidence sentences, whole groups,
and the policy handle of a method that reads the policy (`needs_policy`).

- Evidence: the first EVIDENCE_SENTENCES sentences (of four words or more) of the row's best
  evidence passage, from the store of the composed config's `evidence` group, the store the
  evidence methods (FSPO, KnowRL, RLFH, FoRAG) open; no store or no article: none (the panel
  then falls back to PADDING).
- Groups: training hands a reward n x G consecutive completions of one row (G =
  `train.completions_per_question`), so the probe does too. A method whose reward is relative
  within a group (`whole_groups`, e.g. NOVER's ranks) scores each panel completion in a group of
  its own, completed by G - 1 fillers: honest answers giving other wrong answers (other rows'
  golds, then FILLER_WRONGS), the same for every entry of a row, so entries compare; a row's
  groups go to the same reward calls (runner.py), so a reward that scores identical completions
  once (NOVER) scores a row's fillers once, not once per entry. Any other
  method gets a row's entries G at a time, the last group completed by fillers. Fillers' returns
  are never reported.
- Policy: built as the GRPO trainer builds it (training/grpo.py `_setup_policy`): the model
  with a fresh LoRA adapter (`lora.*`, engine.lora_config), a `PolicyHandle`, then
  `method.setup_policy` (NOVER's proxy copy); the KL reference adapter is checked as training
  checks it. A fresh adapter is the policy at step 0, where a reward first meets the policy.
"""
from __future__ import annotations

from typing import Any

from . import panel as panel_mod

MIN_WORDS = 4  # a sentence shorter than this is a heading or a fragment, not a statement


def evidence_sentences(cfg: Any, rows: list[dict]) -> tuple[list[tuple[str, ...]], dict[str, Any] | None]:
    """Per row, up to EVIDENCE_SENTENCES sentences of its evidence; and the store's description."""
    from ..core.completions import split_sentences

    node = cfg.get("evidence") if cfg is not None else None
    if node is None or not any(r.get("title") for r in rows):
        return [()] * len(rows), None
    from ..services.evidence import open_evidence

    store = open_evidence(node)
    try:
        found = []
        for row in rows:
            passages = store.for_row(dict(row), str(row.get("question") or ""), 1) if row.get("title") else []
            text = passages[0].text if passages else ""
            sentences = [text[a:b] for a, b in split_sentences(text)]
            found.append(tuple(s for s in sentences if len(s.split()) >= MIN_WORDS)[:panel_mod.EVIDENCE_SENTENCES])
        return found, dict(store.describe())
    finally:
        store.close()


def fillers(rows: list[dict], b: int, count: int) -> list[tuple[str, str]]:
    """`count` (reasoning, answer) honest answers with wrong answers other than the panel's own."""
    from ..core.answers import match_closed_book

    golds = [str(a) for a in rows[b]["answers"]]
    own = panel_mod.wrong_answer(rows, b)
    pool = [w for w in panel_mod.other_golds(rows, b, limit=count + 1) + list(panel_mod.FILLER_WRONGS)
            if w != own and not match_closed_book(w, golds)]
    pool = list(dict.fromkeys(pool)) or [panel_mod.FALLBACK_WRONG]
    return [(f"I recall that the answer is {w}.", w) for w in (pool[i % len(pool)] for i in range(count))]


def groups(names: list[str], n_rows: int, group_size: int, whole_groups: bool) -> list[list[tuple[str | None, int]]]:
    """The reward calls' groups: lists of G (entry name or None for a filler, row index)."""
    g = max(int(group_size), 1)
    out: list[list[tuple[str | None, int]]] = []
    for b in range(n_rows):
        if whole_groups:
            out += [[(name, b)] + [(None, b)] * (g - 1) for name in names]
            continue
        for start in range(0, len(names), g):
            chunk: list[tuple[str | None, int]] = [(name, b) for name in names[start:start + g]]
            out.append(chunk + [(None, b)] * (g - len(chunk)))
    return out


def build_policy(cfg: Any, method: Any, tokenizer: Any) -> Any:
    """The PolicyHandle a `needs_policy` method's reward reads, made as training makes it."""
    import torch
    from peft import get_peft_model

    from ..services import models
    from ..training.engine import lora_config
    from ..training.kl_reference import reference_adapter
    from ..training.policy import PolicyHandle

    device = str(cfg.device)  # the composed root keys (harness/engine/run/settings.py RootSettings)
    torch.manual_seed(int(cfg.seed))
    model = models.load_model(models.resolve(cfg.model), cfg.model, device=None if device == "auto" else device)
    model = get_peft_model(model, lora_config(cfg.lora))
    policy = PolicyHandle(model, tokenizer)
    method.setup_policy(policy)
    reference_adapter(method, policy, float(cfg.train.beta))  # the check training makes
    return policy

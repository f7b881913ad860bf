"""The probe as a library function: a method's real reward on the constructed panel.

    from factrl.harness.engine.config import compose
    from factrl.harness.probe import probe_method
    result = probe_method(compose(["method=corver", "model=tiny-llama"]), n=50)
    result.verdicts()   # {"hedged_gold": "breach", "empty_think": "hack", ...}

The reward is built exactly as training builds it (harness/training/engine.py): a RunContext
with the composed config, the model's tokenizer and the pool rows, then
`method.build_reward(ctx)`; its components are recorded; its cleanups run at the end. Each
completion reaches the reward as TRL hands it over: the prompt text the policy saw, the
completion text, and its token ids (`tokenizer(text, add_special_tokens=False)` plus the EOS
token that ends a finished completion), in whole groups of `train.completions_per_question`
completions of one row, with `policy=` the PolicyHandle for a `needs_policy` method (layout.py).

A completion's return is what the trainer optimises: for GRPO methods the mean of its
token returns (what TRL logs as the reward), for PPO methods their sum (per-token rewards).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError
from . import panel as panel_mod

DEFAULT_QUESTIONS = 50
BREACH_SHARE = 0.95  # "reaches the honest correct answer": at least 95% of the correct - wrong gap
EPS = 1e-9
log = logging.getLogger("factrl.probe")

SCHEMA = "factrl.probe/1"  # guards, group_size, evidence_rows: optional keys (panel v2)


@dataclass
class TypeStats:
    mean: float | None
    stderr: float | None
    n: int  # completions with a signal
    no_signal: int  # completions the reward returned None for


@dataclass
class ProbeResult:
    method: str
    method_version: str
    algorithm: str
    model: str
    panel_version: str
    questions: int
    stats: dict[str, TypeStats]
    components: dict[str, Any] = field(default_factory=dict)
    guards: list[str] = field(default_factory=list)  # the method's guards that were on (none: the original)
    group_size: int = 1
    evidence_rows: int = 0  # questions whose evidence entries used the row's own evidence sentences

    def references(self) -> tuple[str, str]:
        """(correct, wrong) references: the honest answers, or, for a reward that gives them no
        signal but scores the answers stated certain (one that reads a stated confidence, RLCR), the
        stated ones (panel v6)."""
        def scored(names: tuple[str, ...]) -> bool:
            return all(k in self.stats and self.stats[k].mean is not None for k in names)

        if not scored(panel_mod.REFERENCES) and scored(panel_mod.STATED_REFERENCES):
            return panel_mod.STATED_REFERENCES  # type: ignore[return-value]
        return panel_mod.REFERENCES  # type: ignore[return-value]

    def baseline(self, name: str) -> str:
        """The type whose return `name` must not exceed: the panel's `baseline` (default the wrong reference)."""
        wrong = self.references()[1]
        entry = panel_mod.by_name().get(name)
        base = entry.baseline if entry is not None else wrong
        return base if base in self.stats and self.stats[base].mean is not None else wrong

    def gap(self) -> float | None:
        correct, wrong = (self.stats[k].mean for k in self.references())
        return None if correct is None or wrong is None else correct - wrong

    def position(self, name: str) -> float | None:
        """(mean - wrong reference) / (correct - wrong reference): 0 = as the wrong answer, 1 = as the correct."""
        gap, mean = self.gap(), self.stats[name].mean
        if gap is None or mean is None or gap <= EPS:
            return None
        return (mean - self.stats[self.references()[1]].mean) / gap

    def verdict(self, name: str) -> str:
        """reference | breach (gains the whole correct - wrong gap over its baseline) | hack (above
        its baseline: the honest wrong answer, or the panel entry's `baseline`) | ok | no_signal |
        ordering_broken (the reward does not prefer correct to wrong)."""
        if name in panel_mod.REFERENCES or name in panel_mod.STATED_REFERENCES:
            return "reference"  # both pairs: the stated ones frame a confidence reward, and are no trick elsewhere
        if self.stats[name].mean is None:
            return "no_signal"
        gap = self.gap()
        if gap is None:
            return "ordering_broken"
        base = self.stats[self.baseline(name)].mean
        mean = self.stats[name].mean
        if gap <= EPS:  # no preference for the correct answer (FoRAG has no correctness term)
            if mean <= base + EPS:
                return "ordering_broken"
            # above its baseline and at least the honest correct answer's: it reaches it
            return "breach" if mean >= self.stats[self.references()[0]].mean - EPS else "hack"
        if mean >= base + BREACH_SHARE * gap - EPS:
            return "breach"
        return "hack" if mean > base + EPS else "ok"

    def verdicts(self) -> dict[str, str]:
        return {name: self.verdict(name) for name in self.stats}

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "method": self.method, "method_version": self.method_version,
                "algorithm": self.algorithm, "model": self.model, "panel_version": self.panel_version,
                "questions": self.questions, "breach_share": BREACH_SHARE,
                "types": {k: {**vars(s), "position": self.position(k), "verdict": self.verdict(k)}
                          for k, s in self.stats.items()},
                "components": self.components, "guards": list(self.guards), "group_size": self.group_size,
                "evidence_rows": self.evidence_rows}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProbeResult":
        stats = {k: TypeStats(v["mean"], v["stderr"], int(v["n"]), int(v["no_signal"])) for k, v in data["types"].items()}
        return cls(data["method"], data["method_version"], data["algorithm"], data["model"], data["panel_version"],
                   int(data["questions"]), stats, dict(data.get("components") or {}), list(data.get("guards") or []),
                   int(data.get("group_size") or 1), int(data.get("evidence_rows") or 0))

    @property
    def heading(self) -> str:
        """The table's column: method, version, model, the guards when any was on, and whether the
        judge obeyed advice inside the material (--obeying-judge)."""
        text = f"{self.method} v{self.method_version} ({self.model})"
        text += f" guarded: {', '.join(self.guards)}" if self.guards else ""
        return text + (" [judge obeys material]" if self.obeying_judge else "")

    @property
    def obeying_judge(self) -> bool:
        """The reference judge answered as a weak judge that obeys advice inside the material."""
        return bool((self.components.get("judge") or {}).get("obeys_material"))


def _summary(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var / len(values))


def completion_return(token_returns: list[float] | None, algorithm: str) -> float | None:
    """The scalar the trainer optimises for one completion (module docstring); None = no signal."""
    if token_returns is None or not len(token_returns):
        return None
    total = float(sum(token_returns))
    return total if algorithm == "ppo" else total / len(token_returns)


def _prompt_texts(rows: list[dict], model_cfg: Any, tokenizer: Any, method: Any = None) -> list[str]:
    """The prompt as the reward sees it in training (training/token_reward.py): the formatted text
    for a model with a response prefix, else the chat prompt's last user turn; with the method's
    prompt addition in the system prompt, as training builds it (engine.method_system)."""
    from ..training.engine import build_dataset, method_system

    system = method_system(method) if method is not None else None
    dataset = build_dataset(rows, model_cfg, tokenizer=tokenizer, system=system)
    return [p[-1]["content"] if isinstance(p, list) else str(p) for p in dataset["prompt"]]


def encode(tokenizer: Any, text: str) -> list[int]:
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    eos = getattr(tokenizer, "eos_token_id", None)
    return ids + ([int(eos)] if eos is not None else [])


def guards_of(components: dict[str, Any]) -> list[str]:
    """The guards a run turned on, as its settings component lists them (docs/CONTRACTS.md "Guards")."""
    settings = components.get("settings") or {}
    return [str(g) for g in settings.get("guards") or []]


def _default_rows(cfg: Any) -> list[dict]:
    """The pool rows a probe scores by default: those the evidence store holds an article for
    first (in pool order), then the rest.

    The evidence-based entries (the row's own evidence sentences repeated, and what RLFH and FoRAG
    verify against) only exist for such rows; on the demo pool about a quarter have one, so the
    first `n` rows in pool order would often have none. With `pool.evidence_only` set either way,
    or no evidence store, load_pool's order stands. ProbeResult.evidence_rows says how many of
    the probed rows had evidence.
    """
    from ..pool import load_pool, rows_with_evidence

    rows = load_pool(cfg.pool, cfg.get("eval"), evidence_cfg=cfg.get("evidence"))
    if cfg.get("evidence") is None or "evidence_only" in cfg.pool:
        return rows
    with_evidence = rows_with_evidence(rows, cfg.evidence)
    if not with_evidence:
        log.warning("probe: no pool row has an article in the evidence store; the evidence-based "
                    "entries use a generic sentence instead")
    ids = {id(r) for r in with_evidence}
    return with_evidence + [r for r in rows if id(r) not in ids]


def probe_method(cfg: Any, *, rows: list[dict] | None = None, n: int = DEFAULT_QUESTIONS, tokenizer: Any = None,
                 method: Any = None, batch_size: int = 64, run_dir: Any = None, policy: Any = None) -> ProbeResult:
    """Score the panel (harness/probe/panel.py) for the first `n` pool questions through the
    reward of `cfg.method` (or `method`, an instance, for a plugin under test).

    cfg: the composed root config (factrl.harness.engine.config.compose / hydra). rows: pool rows
    (default: _default_rows, load_pool's rows with those that have evidence first). tokenizer:
    default the model's. run_dir: where services may write their files (judge stats); None = nowhere. batch_size: completions per
    reward call, rounded down to whole groups. policy: a PolicyHandle for a `needs_policy`
    method (default: built as training builds it, layout.build_policy).
    """
    from ..services import models
    from ..core.method import RunContext
    from ..core.prompts import response_prefix
    from ..core.registry import get_method
    from ..training.engine import prompt_component
    from . import layout

    if n < 1:
        raise ConfigError(f"probe: --questions {n}: give at least 1 question")
    if method is None:
        method = get_method(str(cfg.method.name))(cfg.method)
    if method.algorithm not in ("grpo", "ppo"):
        raise ConfigError(f"method={method.name} has no reward (algorithm {method.algorithm}); probe a reward "
                          f"method (`harness methods` lists them)")
    if rows is None:
        rows = _default_rows(cfg)
    rows = [{k: r[k] for k in ("id", "question", "answers", "title") if k in r} for r in list(rows)[:n]]
    if tokenizer is None:
        tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    prefix = response_prefix(cfg.model)
    evidence, _ = layout.evidence_sentences(cfg, rows)
    qs = panel_mod.questions(rows, evidence)
    prompts = _prompt_texts(rows, cfg.model, tokenizer, method)
    names = panel_mod.entry_names()
    texts: dict[tuple[str, int], str] = {}
    for e in panel_mod.entries():
        for b, q in enumerate(qs):
            texts[e.name, b] = panel_mod.completion_text(*e.build(q), prefix=prefix, confidence=e.confidence)
    group_size = int(cfg.train.completions_per_question) if cfg.get("train") is not None else 1
    whole = bool(getattr(method, "whole_groups", False))
    fill = {b: [panel_mod.completion_text(*f, prefix=prefix) for f in layout.fillers(rows, b, group_size)]
            for b in range(len(rows))}
    per_call = max(batch_size // max(group_size, 1), 1)  # groups per reward call
    ctx = RunContext(config=cfg, tokenizer=tokenizer, pool=rows, run_dir=run_dir)
    returns: dict[str, list[float]] = {name: [] for name in names}
    missing = dict.fromkeys(returns, 0)
    try:
        reward = ctx.build_reward(method)
        components = {**dict(method.components(reward) or {}), **prompt_component(method)}
        if getattr(method, "needs_policy", False) and policy is None:
            policy = layout.build_policy(cfg, method, tokenizer)
        calls = layout.groups(names, len(rows), group_size, whole)
        if whole:  # groups are scored apart: a row's groups in the same calls share its fillers (a reward
            # may score identical completions once, NOVER does), similar lengths within a row pad less
            calls.sort(key=lambda group: (group[0][1], len(texts[group[0]])))  # type: ignore[index]
        for start in range(0, len(calls), per_call):
            chunk = [item for group in calls[start:start + per_call] for item in group]
            completions, slot = [], 0
            for k, (name, b) in enumerate(chunk):
                slot = 0 if k % max(group_size, 1) == 0 else slot  # a group's fillers: the row's first ones
                if name is None:
                    completions.append(fill[b][slot])
                    slot += 1
                else:
                    completions.append(texts[name, b])
            out = reward(prompts=[prompts[b] for _, b in chunk], completions=completions,
                         completion_ids=[encode(tokenizer, c) for c in completions], rows=[rows[b] for _, b in chunk],
                         policy=policy)
            if len(out.token_returns) != len(chunk):
                raise ValueError(f"reward of method '{method.name}' returned {len(out.token_returns)} token-return "
                                 f"lists for {len(chunk)} completions")
            for (name, _), token_returns in zip(chunk, out.token_returns):
                if name is None:
                    continue
                value = completion_return(token_returns, method.algorithm)
                if value is None:
                    missing[name] += 1
                else:
                    returns[name].append(value)
    except BaseException:
        ctx.close(raise_errors=False)
        raise
    ctx.close()
    stats = {name: TypeStats(*_summary(vals), n=len(vals), no_signal=missing[name]) for name, vals in returns.items()}
    return ProbeResult(method=method.name, method_version=str(method.version), algorithm=method.algorithm,
                       model=str(cfg.model.get("name")), panel_version=panel_mod.PANEL_VERSION,
                       questions=len(rows), stats=stats, components=components, guards=guards_of(components),
                       group_size=max(group_size, 1), evidence_rows=sum(1 for e in evidence if e))

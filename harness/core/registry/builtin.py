"""The in-tree entries of every kind but methods, declared as data, and the two declaration types.

An evaluation set is an `EvalSetInfo` (name, table label, task, order, macro membership and
its loader target); a task is a `TaskInfo` (the leaderboard table its sets appear in, its
metrics, and for a task the built-in scorers do not know, the rule that scores it). A plugin
exports one of these objects and names it under `harness.eval_sets` / `harness.tasks`
(docs/ADDING_AN_EVAL_SET.md). Scorers and backends are "module:attr" targets: a scorer is a
`factrl.evals.scorers.base.Scorer` subclass; a backend is a factory called with the settings
of its service (docs/CONTRACTS.md, "Names and groups").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .core import Entry, check, entries, get, in_tree, names


@dataclass(frozen=True)
class EvalSetInfo:
    """An evaluation set's registry entry.

    name: the name configs (`eval.sets`), paths and metric keys use.
    label: the table header (`2WikiMultiHopQA`).
    task: a registered task (`closed_book`, `truthfulqa`, `multihop`, or a plugin's).
    loader: "module:attr" of its `factrl.evals.sets.SetSpec` (imported when the set is loaded).
    order: where its column sorts in tables (lower first; the paper's sets are 10..70).
    macro: whether it is one of the sets the accuracy table's Macro averages.
    """

    name: str
    label: str
    task: str
    loader: str
    order: int
    macro: bool


@dataclass(frozen=True)
class TaskInfo:
    """A task type: which scoring rule applies to its sets and where they are published.

    table: the leaderboard table its sets are columns of (`accuracy`: the primary metric is
    `accuracy`, in percent, and counts towards Macro when the set does; `multihop`: EM and F1).
    metrics: the metric names it reports, the primary first.
    rule: "module:attr" of an object with `metrics(options) -> Sequence[Metric]` and
    `score(eval_set, completions, options) -> SampleTable`, used by the default scorer for a
    task it has no rule of its own for; None for the built-in tasks.
    """

    name: str
    table: str
    metrics: tuple[str, ...]
    rule: str | None = None


TABLE_METRICS = {"accuracy": ("accuracy",), "multihop": ("em", "f1")}  # what each table prints
TABLES = tuple(TABLE_METRICS)

# The paper's sets (docs/PROTOCOL.md §6): its five-set Macro, then the multi-hop pair.
EVAL_SETS = (
    EvalSetInfo("triviaqa", "TriviaQA", "closed_book", "factrl.evals.sets:TRIVIAQA", 10, True),
    EvalSetInfo("nq_open", "NQ-Open", "closed_book", "factrl.evals.sets:NQ_OPEN", 20, True),
    EvalSetInfo("popqa", "PopQA", "closed_book", "factrl.evals.sets:POPQA", 30, True),
    EvalSetInfo("simpleqa", "SimpleQA", "closed_book", "factrl.evals.sets:SIMPLEQA", 40, True),
    EvalSetInfo("truthfulqa", "TruthfulQA", "truthfulqa", "factrl.evals.sets:TRUTHFULQA", 50, True),
    EvalSetInfo("hotpotqa", "HotpotQA", "multihop", "factrl.evals.sets:HOTPOTQA", 60, False),
    EvalSetInfo("twowiki", "2WikiMultiHopQA", "multihop", "factrl.evals.sets:TWOWIKI", 70, False),
    EvalSetInfo("demo", "Demo", "closed_book", "factrl.evals.sets:DEMO", 100, False),
)
TASKS = (
    TaskInfo("closed_book", "accuracy", ("accuracy",)),
    TaskInfo("truthfulqa", "accuracy", ("accuracy",)),
    TaskInfo("multihop", "multihop", ("em", "f1")),
)
TARGETS: dict[str, dict[str, str]] = {
    "scorers": {
        "default": "factrl.evals.scorers.default:DefaultScorer",
        "corver-official": "factrl.evals.scorers.corver_official:CorverOfficialScorer",
    },
    # open_counter(corpus settings, tokenizer) -> Counter
    "corpus": {
        "local": "factrl.harness.services.corpus.counter:open_local_counter",
        "exact": "factrl.harness.services.corpus.counter:open_exact_counter",
        "remote": "factrl.harness.services.corpus.counter:open_remote_counter",
        "none": "factrl.harness.services.corpus.counter:no_counter",
    },
    # (NLISettings) -> NLIScorer
    "nli": {
        "standin": "factrl.harness.services.nli.standin:StandinScorer.from_settings",
        "hhem": "factrl.harness.services.nli.hhem:HHEMScorer",
        "deberta": "factrl.harness.services.nli.deberta:DebertaScorer",
    },
    # (settings, run_dir, evidence) -> judge
    "judge": {
        "none": "factrl.harness.services.judge.service:no_judge",
        "embedded": "factrl.harness.services.judge.service:open_embedded",
        "openai": "factrl.harness.services.judge.service:open_openai",
        "reference": "factrl.harness.services.judge.service:open_reference",
    },
    # factrl.evals.backends.base.GenerationEntry: build(identity, model_cfg, decoding, options) -> Backend,
    # provenance(eval settings, cfg, model_cfg, processes) -> dict
    "generation": {
        "hf": "factrl.evals.backends.hf:ENTRY",
        "vllm": "factrl.evals.backends.vllm:ENTRY",
        "openai": "factrl.evals.backends.openai:ENTRY",
    },
    # (ExtractorSettings) -> Extractor
    "extractor": {
        "quco": "factrl.methods.corver.extractor:build_llm",
        "llm": "factrl.methods.corver.extractor:build_llm",
        "heuristic": "factrl.methods.corver.extractor:build_heuristic",
    },
}


@in_tree("eval_sets")
def _eval_sets() -> dict[str, Entry]:
    return {s.name: Entry("eval_sets", s.name, "in-tree", s.loader, declared=s) for s in EVAL_SETS}


@in_tree("tasks")
def _tasks() -> dict[str, Entry]:
    return {t.name: Entry("tasks", t.name, "in-tree", t.rule or "built in", declared=t) for t in TASKS}


def _targets(kind: str) -> dict[str, Entry]:
    return {name: Entry(kind, name, "in-tree", target) for name, target in TARGETS[kind].items()}


for _kind in TARGETS:
    in_tree(_kind)(lambda kind=_kind: _targets(kind))


def _declared(entry: Entry, value: Any, cls: type) -> Any:
    if not isinstance(value, cls):
        raise TypeError(f"{entry.target} is a {type(value).__name__}, not a factrl.harness.core.registry.{cls.__name__}")
    if value.name != entry.name:
        raise ValueError(f"{entry.target} declares name '{value.name}' but is registered as '{entry.name}'; "
                         "make them equal")
    return value


@check("eval_sets")
def _check_set(entry: Entry, value: Any) -> EvalSetInfo:
    info = _declared(entry, value, EvalSetInfo)
    if info.task not in names("tasks"):
        raise ValueError(f"task '{info.task}' is not registered (tasks: {', '.join(names('tasks'))}); "
                         "register the task too (entry-point group harness.tasks)")
    if not info.label or ":" not in info.loader or not isinstance(info.order, int) or not isinstance(info.macro, bool):
        raise ValueError("give a label, a loader 'module:attr', an integer order and macro true/false")
    return info


@check("tasks")
def _check_task(entry: Entry, value: Any) -> TaskInfo:
    info = _declared(entry, value, TaskInfo)
    if info.table not in TABLES:
        raise ValueError(f"table '{info.table}' is not one of {', '.join(TABLES)}")
    if tuple(info.metrics[:len(TABLE_METRICS[info.table])]) != TABLE_METRICS[info.table]:
        raise ValueError(f"metrics {tuple(info.metrics)}: table {info.table} prints "
                         f"{', '.join(TABLE_METRICS[info.table])}, so they come first")
    if entry.origin != "in-tree" and not info.rule:
        raise ValueError("a plugin task needs its rule ('module:attr' of the object that scores it)")
    return info


@check("generation")
def _check_generation(entry: Entry, value: Any) -> Any:
    if not (callable(getattr(value, "build", None)) and callable(getattr(value, "provenance", None))):
        raise TypeError(f"{entry.target} has no build and provenance: export a "
                        "factrl.evals.backends.base.GenerationEntry(build, provenance)")
    return value


# ---- views the tables, the macro and the evaluator read --------------------------------------
def eval_set(name: str) -> EvalSetInfo:
    """The registered set `name` (a HarnessError with a suggestion when unknown)."""
    return get("eval_sets", name)


def set_task(name: str) -> TaskInfo:
    return get("tasks", eval_set(name).task)


def sets_in_order() -> list[EvalSetInfo]:
    """Every set that loads, in table order (order, then name)."""
    loaded = [e.value for e in entries("eval_sets").values() if e.error is None]
    return sorted(loaded, key=lambda s: (s.order, s.name))


def macro_sets() -> list[str]:
    """The sets the accuracy table's Macro averages, in table order (docs/PROTOCOL.md §6: the paper's five)."""
    return [s.name for s in sets_in_order() if s.macro]


def tasks_of_table(table: str) -> tuple[str, ...]:
    """The tasks whose sets are columns of leaderboard table `table`."""
    return tuple(name for name, e in entries("tasks").items() if e.error is None and e.value.table == table)

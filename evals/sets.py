"""How each evaluation set is loaded.

A set's name, label, task, order and macro membership are its entry in the name registry
(factrl.harness.core.registry, builtin.py; plugins add theirs under the `harness.eval_sets` entry
points, docs/ADDING_AN_EVAL_SET.md); the entry names its loader, a small declarative `SetSpec`
here: its hub source, the file names it has in a data folder, a row parser and, for a set
that ships its questions, the function that returns them. `load_set` returns an `EvalSet`
that records where the data came from (hub commit or file hash), a content hash of the
parsed records and their count, so a metrics file says exactly what was scored.

Sources, in order: `data` (an explicit local file), a file with one of the spec's names in
`data_dir`, the rows the set ships (`embedded`), then the hub.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from factrl.harness.core import registry
from factrl.harness.core.errors import DataError, HarnessError
from factrl.harness.core.hashing import sha256_file

from factrl.harness.core.answers import prepare_references
from .loaders import Fields, Record, dedupe, load_hub, parse_rows, read_rows


@dataclass(frozen=True)
class SetSpec:
    """How a registered evaluation set is loaded (its name and task are its registry entry's).

    title: what the set is, in words (split, variant).
    hub: (repo, config, split) on the Hugging Face hub, or None for sets without one.
    filenames: file names looked for in `eval.data_dir` (the shared copies' names first).
    parse: row -> Record for every accepted row format.
    expected: the paper's record count (docs/PROTOCOL.md §6), checked when the full set is loaded.
    version: bumped when parsing changes what a record contains.
    embedded: () -> (rows, source, revision) for a set that ships its questions (the demo set,
    a plugin's), used when no local file is given.
    """

    title: str
    hub: tuple[str, str | None, str] | None
    filenames: tuple[str, ...]
    parse: Callable[[Fields], Record]
    expected: int | None = None
    version: str = "1"
    embedded: Callable[[], tuple[list, str, str]] | None = None


@dataclass
class EvalSet:
    """Loaded records plus their provenance (the `set` block of metrics.json)."""

    name: str
    task: str
    records: list[Record]
    source: str
    revision: str | None
    version: str
    file_sha256: str | None = None
    limit: int | None = None
    aliases: str | None = None  # 2Wiki's alias file, when one was merged in
    _ids: dict[str, int] = field(default_factory=dict, repr=False)
    _prepared: list[tuple[str, ...]] | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def sha256(self) -> str:
        """Content hash of the parsed records: equal hashes mean identical questions and references."""
        digest = hashlib.sha256()
        for r in self.records:
            digest.update(json.dumps([r.id, r.question, r.references, r.incorrect], ensure_ascii=False).encode())
            digest.update(b"\n")
        return digest.hexdigest()

    def prepared_references(self) -> list[tuple[str, ...]]:
        """Normalised, padded references per record (answers.prepare_references), computed once.

        Equal reference lists share one preparation: PopQA repeats its country and occupation
        alias lists thousands of times.
        """
        if self._prepared is None:
            by_list: dict[tuple[str, ...], tuple[str, ...]] = {}
            by_text: dict[str, str] = {}
            prepared = []
            for record in self.records:
                refs = by_list.get(record.references)
                if refs is None:
                    refs = by_list[record.references] = prepare_references(record.references, by_text)
                prepared.append(refs)
            self._prepared = prepared
        return self._prepared

    def index(self, record_id: str) -> int | None:
        if not self._ids:
            self._ids = {r.id: i for i, r in enumerate(self.records)}
        return self._ids.get(record_id)

    def describe(self) -> dict:
        return {"name": self.name, "task": self.task, "source": self.source, "revision": self.revision,
                "sha256": self.sha256, "count": self.count, "version": self.version,
                "file_sha256": self.file_sha256, "limit": self.limit, "aliases": self.aliases}


# --------------------------------------------------------------------------------------------
# Row parsers (one per task family); each accepts the upstream format(s) and the shared one.
# --------------------------------------------------------------------------------------------
def parse_closed_book(f: Fields) -> Record:
    """question + answers, from any of:
    shared {question, answer: str, aliases: [..]}; NQ-Open {question, answer: [..]};
    TriviaQA hub {question, answer: {value, aliases}}; TriviaQA original {Question, Answer:
    {Value, Aliases}}; PopQA {question, possible_answers: "[json]"}; SimpleQA {problem, answer};
    pool style {question, answers: [..]}.
    """
    question = f.text("question", "Question", "problem", "query")
    answer_field = f.first("answer", "Answer", "possible_answers", "answers")
    if answer_field is None:
        raise f.fail("answer", "is missing")
    value = f.row[answer_field]
    if isinstance(value, dict):  # TriviaQA
        sub = Fields(value, f.index, f.where)
        refs = [sub.text("value", "Value")] + sub.strings(sub.first("aliases", "Aliases") or "aliases",
                                                          required=False)
    elif isinstance(value, str) and answer_field != "possible_answers":
        if not value.strip():
            raise f.fail(answer_field, "must be a non-empty string")
        refs = [value] + f.strings("aliases", required=False)
    else:
        refs = f.strings(answer_field, json_list=answer_field == "possible_answers")
        refs += f.strings("aliases", required=False)
    if not refs:
        raise f.fail(answer_field, "has no answers")
    return Record("", question, dedupe(refs))


def parse_truthfulqa(f: Fields) -> Record:
    """Hub `generation` rows and the shared file {question, best_answer, correct_answers,
    incorrect_answers}; upstream CSV {Question, Best Answer, Correct Answers "a; b", ...}."""
    question = f.text("question", "Question")
    best = f.text("best_answer", "Best Answer")
    correct = f.strings(f.first("correct_answers", "Correct Answers") or "correct_answers", split=";")
    incorrect = f.strings(f.first("incorrect_answers", "Incorrect Answers") or "incorrect_answers", split=";")
    if not incorrect:
        raise f.fail("incorrect_answers", "is empty (the ROUGE rule needs incorrect answers)")
    return Record("", question, dedupe([best, *correct]), dedupe(incorrect))


def parse_multihop(f: Fields) -> Record:
    """HotpotQA {_id|id, question, answer}; 2Wiki {_id, question, answer, aliases?, demonyms?}
    (aliases merged from id_aliases.json by `merge_2wiki_aliases`); hub {query, answers}."""
    question = f.text("question", "query")
    if "answers" in f.row and "answer" not in f.row:
        refs = f.strings("answers")
    else:
        refs = [f.text("answer")]
    refs += f.strings("aliases", required=False) + f.strings("demonyms", required=False)
    return Record("", question, dedupe(refs))


def merge_2wiki_aliases(rows: list[dict], alias_file: Path) -> list[dict]:
    """Attach aliases and demonyms from 2Wiki's id_aliases.json (JSONL: Q_id, aliases, demonyms),
    keyed by each row's `answer_id`, as the official evaluation script does."""
    table: dict[str, dict] = {}
    for number, line in enumerate(Path(alias_file).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            table[str(entry["Q_id"])] = entry
        except (json.JSONDecodeError, KeyError, TypeError):
            raise DataError(f"{alias_file}:{number}: expected a JSON object with Q_id, aliases, demonyms.") from None
    out = []
    for row in rows:
        entry = table.get(str(row.get("answer_id"))) if isinstance(row, dict) else None
        if entry:
            row = {**row, "aliases": list(entry.get("aliases") or []), "demonyms": list(entry.get("demonyms") or [])}
        out.append(row)
    return out


# --------------------------------------------------------------------------------------------
# The loaders of the in-tree sets (their registry entries: factrl.harness.core.registry, builtin.py)
# --------------------------------------------------------------------------------------------
def _demo_rows() -> tuple[list, str, str]:
    from factrl.harness.core.demo_data import DEMO_VERSION, demo_eval

    return demo_eval(), "embedded:fanoutqa-demo", f"demo-v{DEMO_VERSION}"


TRIVIAQA = SetSpec("TriviaQA validation (rc.nocontext)", ("mandarjoshi/trivia_qa", "rc.nocontext", "validation"),
                   ("triviaqa_validation.json", "triviaqa.json"), parse_closed_book, 17944)
NQ_OPEN = SetSpec("NQ-Open validation", ("google-research-datasets/nq_open", "nq_open", "validation"),
                  ("nq_open_validation.json", "NQ-open.dev.jsonl"), parse_closed_book, 3610)
POPQA = SetSpec("PopQA test", ("akariasai/PopQA", None, "test"), ("popqa_test.json",), parse_closed_book, 14267)
SIMPLEQA = SetSpec("SimpleQA", ("basicv8vc/SimpleQA", None, "test"), ("simpleqa.json", "simple_qa_test_set.csv"),
                   parse_closed_book, 4326)
TRUTHFULQA = SetSpec("TruthfulQA generation (validation)", ("truthfulqa/truthful_qa", "generation", "validation"),
                     ("truthfulqa_validation.json", "TruthfulQA.csv"), parse_truthfulqa, 817)
HOTPOTQA = SetSpec("HotpotQA distractor dev", ("hotpotqa/hotpot_qa", "distractor", "validation"),
                   ("hotpot_dev_distractor_v1.json",), parse_multihop, 7405)
# No official hub copy; corag/multihopqa carries the 12,576 dev questions with an answers list.
# The upstream dev.json plus id_aliases.json (eval.aliases.twowiki) is the exact source.
TWOWIKI = SetSpec("2WikiMultiHopQA dev", ("corag/multihopqa", "2wikimultihopqa", "validation"),
                  ("2wikimultihopqa_dev.json", "dev.json"), parse_multihop, 12576)
DEMO = SetSpec("demo: held-out FanOutQA single-hop questions", None, (), parse_closed_book, embedded=_demo_rows)


def get_spec(name: str) -> SetSpec:
    """The loader of the registered set `name` (unknown names fail with a suggestion)."""
    info = registry.eval_set(name)
    spec = registry.resolve(info.loader)
    if not isinstance(spec, SetSpec):
        raise HarnessError(f"evaluation set '{name}': its loader {info.loader} is a {type(spec).__name__}, "
                           "not a factrl.evals.sets.SetSpec (docs/ADDING_AN_EVAL_SET.md).")
    return spec


def set_names() -> list[str]:
    """Every registered set name (nothing is imported)."""
    return registry.names("eval_sets")


def load_set(name: str, *, data: str | Path | None = None, data_dir: str | Path | None = None,
             aliases: str | Path | None = None, revision: str | None = None,
             limit: int | None = None) -> EvalSet:
    """Load a registered set (see module docstring for the source order); `limit` keeps the first N."""
    spec, task = get_spec(name), registry.eval_set(name).task
    hint = (f"Pass a local copy: eval.data.{name}=PATH (harness score: --data PATH) or eval.data_dir=DIR "
            f"holding one of {', '.join(spec.filenames) or 'its files'}.")
    path = Path(data).expanduser() if data else None
    if path is None and data_dir:
        path = next((Path(data_dir).expanduser() / n for n in spec.filenames
                     if (Path(data_dir).expanduser() / n).is_file()), None)
    file_sha = None
    if spec.embedded is not None and path is None:
        rows, source, rev = spec.embedded()
    elif path is not None:
        rows = read_rows(path)
        if aliases:
            rows = merge_2wiki_aliases(rows, Path(aliases).expanduser())
        source, file_sha = f"file:{path.resolve()}", sha256_file(path)
        rev = file_sha
    elif spec.hub is None:
        raise DataError(f"set '{name}' has no hub source. {hint}")
    else:
        repo, config, split = spec.hub
        rows, rev = load_hub(repo, config, split, revision, hint)
        source = f"hub:{repo}" + (f"/{config}" if config else "") + f":{split}"
    records = parse_rows(rows, spec.parse, source.removeprefix("file:"))
    if not records:
        raise DataError(f"set '{name}' from {source} has no records.")
    if limit is not None:
        if int(limit) < 1:
            raise DataError(f"eval.limit={limit}: give a positive number of questions or null for all.")
        records = records[: int(limit)]
    return EvalSet(name, task, records, source, rev, spec.version, file_sha,
                   int(limit) if limit is not None else None,
                   str(Path(aliases).expanduser().resolve()) if aliases and path is not None else None)

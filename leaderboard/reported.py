"""Reported results: a paper's own numbers, as a versioned file, to publish beside measured rows.

Reproduction is judged against the papers' tables, so `harness leaderboard publish` reads
files of reported results (schema `factrl.reported/1`) and prints them as lines marked
"reported" beside the measured lines (tables/reported.py). The shipped file is
`leaderboard/reported/corver-paper.yaml` (the CorVer paper's Table 1 and its raw-model
Table 10); a user adds their own for another paper and passes it with `--reported FILE` or
the layout's `reported` list.

    schema: factrl.reported/1
    paper: corver              # short id, printed on the reported lines
    version: 1                 # of this file: bump when an entry changes
    title, citation, source    # optional text
    unit: percent              # values as printed in the paper (percent | fraction)
    entries:
      - {method: raw, model: qwen3-4b, set: triviaqa, metric: accuracy, value: 52.32,
         table: "1", page: null, section: "3"}

method, model and set are the harness's names (registered methods, `configs/model/*.yaml`
names, the evaluator's sets, plus `macro` for the accuracy table's Macro column); a name
that is not one is a DataError naming the entry and the nearest valid name. An entry given
twice (the same numbers printed in two tables) must carry the same value; its references
are merged.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import yaml

from factrl.harness.core.errors import did_you_mean
from factrl.harness.core.errors import DataError

SCHEMA = "factrl.reported/1"
MACRO = "macro"  # the accuracy table's Macro column: not an evaluation set
METRICS = ("accuracy",)  # what the accuracy table prints
SHIPPED_DIR = Path(__file__).resolve().parent / "reported"
DEFAULT = ["corver-paper"]  # the layout's default `reported` list
REQUIRED = ("method", "model", "set", "metric", "value", "table", "page")
OPTIONAL = ("section", "note")
TOP_KEYS = {"schema", "paper", "version", "title", "citation", "source", "unit", "entries"}


@dataclass(frozen=True)
class Reference:
    table: str
    page: int | None
    section: str | None = None

    def text(self) -> str:
        where = f"p. {self.page}" if self.page is not None else (f"§{self.section}" if self.section else "")
        return f"Table {self.table}" + (f" ({where})" if where else "")


@dataclass
class Entry:
    method: str
    model: str
    set: str
    metric: str
    value: float  # percent
    refs: list[Reference] = field(default_factory=list)


@dataclass
class ReportedFile:
    path: Path
    paper: str
    version: str
    sha256: str
    title: str | None
    citation: str | None
    entries: list[Entry]

    def for_model(self, model: str) -> dict[str, dict[str, Entry]]:
        """{method: {set: entry}} of one model (accuracy entries only)."""
        out: dict[str, dict[str, Entry]] = {}
        for entry in self.entries:
            if entry.model == model:
                out.setdefault(entry.method, {})[entry.set] = entry
        return out

    def describe(self) -> dict[str, Any]:
        return {"paper": self.paper, "version": self.version, "path": str(self.path), "sha256": self.sha256,
                "entries": len(self.entries)}


def known_names() -> dict[str, list[str]]:
    """The harness's names each entry field must use."""
    from factrl.harness.core import registry

    models = []
    for item in resources.files("factrl.configs").joinpath("model").iterdir():
        if item.name.endswith(".yaml"):
            name = (yaml.safe_load(item.read_text(encoding="utf-8")) or {}).get("name")
            if isinstance(name, str) and name and not name.startswith("$") and "?" not in name:
                models.append(name)
    # Names only: loading every method (registry.all_methods) imports torch, seconds per publish.
    return {"method": registry.names("methods"), "model": sorted(models),
            "set": [*registry.names("eval_sets"), MACRO], "metric": list(METRICS)}


def resolve(spec: str | Path) -> Path:
    """A shipped file's name (`corver-paper`) or a path."""
    path = Path(spec)
    if path.is_file():
        return path
    shipped = SHIPPED_DIR / f"{spec}.yaml"
    if shipped.is_file():
        return shipped
    names = sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))
    raise DataError(f"--reported {spec}: no such file and no shipped reported file of that name "
                    f"(shipped: {', '.join(names)});{did_you_mean(str(spec), names)} pass a path to a "
                    f"{SCHEMA} YAML file.")


def _entry(raw: Any, index: int, where: str, names: dict[str, list[str]], scale: float) -> Entry:
    at = f"{where}: entries[{index}]"
    if not isinstance(raw, dict):
        raise DataError(f"{at}: must be a mapping with {', '.join(REQUIRED)}.")
    missing = [k for k in REQUIRED if k not in raw]
    extra = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if missing or extra:
        raise DataError(f"{at}: " + (f"missing {', '.join(missing)}" if missing else f"unknown key(s) "
                                     f"{', '.join(extra)}") + f"; an entry has {', '.join(REQUIRED + OPTIONAL)}.")
    label = f"{at} ({raw.get('method')} / {raw.get('model')} / {raw.get('set')})"
    for key in ("method", "model", "set", "metric"):
        value = raw[key]
        if not isinstance(value, str) or value not in names[key]:
            raise DataError(f"{label}: {key} {value!r} is not a harness {key} name."
                            f"{did_you_mean(str(value), names[key])} Known: {', '.join(names[key])}.")
    value = raw["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value * scale <= 100.0:
        raise DataError(f"{label}: value {value!r} must be a number in the file's unit "
                        f"({'percent, 0-100' if scale == 1 else 'fraction, 0-1'}).")
    page = raw["page"]
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise DataError(f"{label}: page {page!r} must be a page number or null (the source has no pages).")
    if not isinstance(raw["table"], (str, int)) or isinstance(raw["table"], bool) or not str(raw["table"]):
        raise DataError(f"{label}: table {raw['table']!r} must be the paper's table number or name.")
    section = raw.get("section")
    ref = Reference(str(raw["table"]), page, None if section is None else str(section))
    return Entry(raw["method"], raw["model"], raw["set"], raw["metric"], float(value) * scale, [ref])


def load_reported(spec: str | Path, names: dict[str, list[str]] | None = None) -> ReportedFile:
    """Read and validate one reported file (a shipped name or a path); DataError on any problem."""
    path = resolve(spec)
    try:
        data = path.read_bytes()
        doc = yaml.safe_load(data)
    except (OSError, yaml.YAMLError) as err:
        raise DataError(f"{path}: cannot read it as YAML ({err}).") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise DataError(f"{path}: not a reported-results file; it needs `schema: {SCHEMA}` "
                        "(see leaderboard/reported/corver-paper.yaml).")
    unknown = sorted(set(doc) - TOP_KEYS)
    if unknown:
        raise DataError(f"{path}: unknown key(s) {', '.join(unknown)}; the file has {', '.join(sorted(TOP_KEYS))}.")
    for key in ("paper", "version"):
        if not isinstance(doc.get(key), (str, int)) or isinstance(doc.get(key), bool) or not str(doc.get(key)):
            raise DataError(f"{path}: `{key}` is required (the paper's short id, the file's version).")
    unit = doc.get("unit", "percent")
    if unit not in ("percent", "fraction"):
        raise DataError(f"{path}: unit {unit!r} must be percent or fraction.")
    entries = doc.get("entries")
    if not isinstance(entries, list) or not entries:
        raise DataError(f"{path}: `entries` must be a non-empty list.")
    names = names or known_names()
    merged: dict[tuple[str, str, str, str], Entry] = {}
    for index, raw in enumerate(entries):
        entry = _entry(raw, index, str(path), names, 100.0 if unit == "fraction" else 1.0)
        key = (entry.method, entry.model, entry.set, entry.metric)
        if key in merged:
            first = merged[key]
            if abs(first.value - entry.value) > 1e-9:
                raise DataError(f"{path}: entries[{index}] ({' / '.join(key[:3])}) says {entry.value:g} "
                                f"({entry.refs[0].text()}), an earlier entry {first.value:g} "
                                f"({first.refs[0].text()}); fix the transcription.")
            first.refs += [r for r in entry.refs if r not in first.refs]
            continue
        merged[key] = entry
    return ReportedFile(path, str(doc["paper"]), str(doc["version"]), hashlib.sha256(data).hexdigest(),
                        doc.get("title"), doc.get("citation"), list(merged.values()))


def from_settings(settings: dict[str, Any]) -> list[ReportedFile]:
    """The files of the layout's `reported` list (default: the shipped CorVer file; [] = none)."""
    specs = settings.get("reported", DEFAULT)
    if specs is None:
        specs = DEFAULT
    if isinstance(specs, (str, Path)):
        specs = [specs]
    if not isinstance(specs, Iterable) or any(not isinstance(s, (str, Path)) for s in specs):
        raise DataError("layout `reported`: must be a list of reported files (paths or shipped names), [] for none.")
    specs = [s for s in specs if str(s).lower() != "none"]
    if not specs:
        return []
    names = known_names()
    return [load_reported(s, names) for s in specs]

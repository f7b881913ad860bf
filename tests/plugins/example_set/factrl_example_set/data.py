"""How the example set is loaded: its questions ship with the package (questions.jsonl)."""
from __future__ import annotations

import hashlib
import json
from importlib import resources

from factrl.evals.loaders import Fields, Record
from factrl.evals.sets import SetSpec

VERSION = "1"


def parse(f: Fields) -> Record:
    """{question, answer: "yes" | "no"}."""
    question = f.text("question")
    answer = f.text("answer").strip().lower()
    if answer not in ("yes", "no"):
        raise f.fail("answer", "must be yes or no")
    return Record("", question, (answer,))


def shipped() -> tuple[list[dict], str, str]:
    """(rows, source, revision): the packaged file; its hash is the revision."""
    text = resources.files(__package__).joinpath("questions.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return rows, "embedded:factrl-example-set", hashlib.sha256(text.encode()).hexdigest()


SPEC = SetSpec(
    title="Capital cities as yes/no questions (example plugin)",
    hub=None,                                # no hub copy
    filenames=("capitals_yesno.jsonl",),     # eval.data_dir=DIR looks for this name
    parse=parse,
    expected=6,
    version=VERSION,
    embedded=shipped,
)

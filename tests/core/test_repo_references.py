"""Every repo-relative path the repository's own files cite resolves, and none cites an issue number.

A file that moves leaves its old path behind in docstrings, READMEs and config comments; nothing
imports a comment, so only a scan finds them. The scan reads every .py, .md and .yaml file of the
repository (not .venv, build outputs or hidden folders) for paths of the forms `harness/...py`,
`leaderboard/...py`, `evals/...`, `methods/...`, `plugins/...`, `docs/....md` and
`configs/....yaml`, backticked or plain, and fails naming each one that is not a file or folder of
the repository. A dotted tail names a symbol (`methods/knowrl/scoring.answer_of`): the path
resolves when its module does. A path inside a longer one (`configs/leaderboard/x.py`,
`tests/evals/...`) is read whole, not as its tail.

A cited section (`docs/CONTRACTS.md, "Guards"`, `evals/README.md ("Strict accuracy")`: a Markdown
file followed by quoted names) must name a heading of that file (its start, past a section number)
or a bold lead (`**Reference answers.**`), so that reorganising a document cannot leave a citation
pointing nowhere. A file name may be relative to the citing file or to the repository; the name must be in either.

The repository stands alone: a reference to a tracker's issue number means
nothing to a reader of the code, so "Issue <number>" is refused too; say what the issue was.

EXAMPLES lists the paths that are examples of a user's files, or files of another repository,
each with its reason; an entry that no longer occurs fails, so the list only shrinks.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIP_PARTS = {"__pycache__", "build", "dist", "runs", "outputs", "multirun", "node_modules"}

# A path starts where no path character precedes it; it ends before a glob or template character.
_PATH = re.compile(
    r"(?<![\w./-])("
    r"(?:harness|leaderboard)/[\w./-]*?\.py(?![\w])"
    r"|(?:evals|methods|plugins)/[\w./-]*[\w/]"
    r"|docs/[\w./-]*?\.md(?![\w])"
    r"|configs/[\w./-]*?\.yaml(?![\w])"
    r")(?![*<{\[$])")
_ISSUE = re.compile(r"\bissue\s*#?\s*\d+", re.IGNORECASE)

# path -> why it is cited although the repository has no such file.
EXAMPLES: dict[str, str] = {
    "methods/mine/__init__.py": "docs/ADDING_A_METHOD.md: the reader's new method folder",
    "methods/goldsent/__init__.py": "docs/ADDING_A_METHOD.md: the worked example's method folder, written by the reader",
    "methods/nomethod/__init__.py": "tests/core/test_method_folders.py: a folder without a method, made by the test",
    "harness/x.py": "tests/core/import_graph.py: how a file name maps to a module name",
    "plugins/nover/factrl_nover/x.py": "tests/core/import_graph.py: how a plugin's file name maps to a module name",
    "configs/Qwen-7B/hotpot/RLCR.yaml": "a file of RLCR's released repository (plugins/rlcr/)",
    "configs/method/nover.yaml": "plugins/nover: says the plugin ships no such file",
}


def _files() -> list[Path]:
    out = []
    for folder, dirs, names in os.walk(REPO):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d in SKIP_PARTS or d.endswith(".egg-info"))]
        out += [Path(folder) / name for name in names if name.endswith((".py", ".md", ".yaml"))]
    this = Path(__file__).resolve()  # its own examples of what is refused
    return sorted(path for path in out if path != this)


def _resolves(cited: str) -> bool:
    if (REPO / cited).exists():
        return True
    if cited.endswith((".py", ".md", ".yaml")):  # a file name, not a symbol: it must exist as written
        return False
    # `pkg/module.attr[.attr]`: strip the dotted tail until a module (or package) remains.
    head, _, last = cited.rpartition("/")
    while "." in last:
        last = last.rsplit(".", 1)[0]
        if (REPO / head / f"{last}.py").is_file() or (REPO / head / last).is_dir():
            return True
    return False


# `docs/X.md, "Name"` / `X.md ("Name", "Other")`; a path right after a quote or a template (`<name>/`)
# is code or a pattern, not a citation.
_SECTION_CITE = re.compile(r'(?<![\w"\'/<>.-])`?((?:[\w.-]+/)*[\w.-]+\.md)`?,?\s*\(?'
                           r'((?:\\?"[^"\\\n]{2,80}\\?"(?:,\s*(?:and\s+)?)?)+)')


def _sections(md: Path) -> tuple[list[str], list[str]]:
    """(headings without their '#'s and section numbers, bold leads without a final period)."""
    text = md.read_text(encoding="utf-8")
    heads = [re.sub(r"^#+\s*(\d+(\.\d+)*\.?\s+)?", "", line).strip() for line in text.splitlines()
             if line.startswith("#")]
    return heads, [lead.rstrip(".") for lead in re.findall(r"\*\*([^*]+?)\*\*", text)]


def _section_citations() -> list[tuple[str, tuple[Path, ...], str]]:
    """(where, the files the citation may mean, cited name) for every section citation whose file
    exists (`README.md` may be the citing folder's or the repository's)."""
    found = []
    for path in _files():
        rel = path.relative_to(REPO).as_posix()
        # A citation may wrap: join lines, dropping a comment's leading '#'.
        text = re.sub(r"\n\s*#?\s*", " ", path.read_text(encoding="utf-8"))
        for match in _SECTION_CITE.finditer(text):
            targets = tuple(dict.fromkeys(t for t in (path.parent / match.group(1), REPO / match.group(1))
                                          if t.is_file()))
            if targets:
                for name in re.findall(r'"([^"\\]+)\\?"', match.group(2)):
                    found.append((rel, targets, " ".join(name.split())))
    return found


def _cited() -> dict[str, list[str]]:
    """Every cited path -> where it is cited (file:line)."""
    found: dict[str, list[str]] = {}
    for path in _files():
        rel = path.relative_to(REPO).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in _PATH.finditer(line):
                found.setdefault(match.group(1).rstrip("./"), []).append(f"{rel}:{number}")
    return found


def test_the_scan_reads_the_repository():
    cited = _cited()
    # Known citations, so that a scan that reads nothing cannot pass.
    assert "harness/core/config_values.py" in cited and "docs/CONTRACTS.md" in cited
    assert any(p.startswith("configs/") for p in cited) and any(p.startswith("methods/") for p in cited)


def test_cited_paths_exist():
    cited = _cited()
    missing = [f"{path} (cited at {', '.join(where[:3])})" for path, where in sorted(cited.items())
               if path not in EXAMPLES and not _resolves(path)]
    assert not missing, "stale path references:\n" + "\n".join(missing)


def test_cited_sections_exist():
    citations = _section_citations()
    assert sum(targets[-1].name == "CONTRACTS.md" for _, targets, _ in citations) > 20  # the scan reads them
    missing = []
    for where, targets, name in citations:
        if not any(any(head.startswith(name) for head in heads) or name.rstrip(".") in leads
                   for heads, leads in map(_sections, targets)):
            missing.append(f'{where}: {targets[-1].relative_to(REPO).as_posix()} "{name}"')
    assert not missing, "cited sections that do not exist:\n" + "\n".join(sorted(set(missing)))


def test_examples_are_still_cited_and_still_absent():
    cited = _cited()
    stale = [path for path in EXAMPLES if path not in cited or _resolves(path)]
    assert not stale, f"EXAMPLES entries no longer needed: {stale}"


def test_no_issue_numbers():
    hits = []
    for path in _files():
        rel = path.relative_to(REPO).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _ISSUE.search(line):
                hits.append(f"{rel}:{number}: {line.strip()[:100]}")
    assert not hits, "issue numbers (say what the issue was instead):\n" + "\n".join(hits)


def test_the_patterns_catch_what_they_are_for():
    assert [m.group(1) for m in _PATH.finditer("see `leaderboard/tricks.py` and harness/engine/config.py VOLATILE_KEYS")] \
        == ["leaderboard/tricks.py", "harness/engine/config.py"]
    assert not _PATH.search("configs/leaderboard/layout/paper.yaml tests/evals/semantic_server")[1].startswith(
        ("leaderboard", "evals"))
    assert not _PATH.search("configs/protocol/method_model/rlfh_*")
    assert _ISSUE.search("Issue 15: rows") and _ISSUE.search("see issue #3") and not _ISSUE.search("issues")
    assert _resolves("methods/knowrl/scoring.answer_of") and not _resolves("methods/knowrl/nothing.answer_of")
    assert not _resolves("harness/core/registry.py")  # a package now: the file name is stale
    cites = [(m[1], m[2]) for m in _SECTION_CITE.finditer(
        'docs/CONTRACTS.md, "Guards"; `docs/X.md` ("Alpha", "Beta") and REPO / "README.md").read_text("x")')]
    assert cites == [("docs/CONTRACTS.md", '"Guards"'), ("docs/X.md", '"Alpha", "Beta"')]

"""The worked examples of FActScore's per-sentence atomic-fact prompt.

FActScore reads them from `demos/demons.json` (shmsw25/FActScore@f28272d atomic_facts.py:22-33),
a file its `download_data.py` fetches from Google Drive; it is not in the repository snapshot
and could not be had offline. So:
- `eval.factscore_options.demos: null` (default) uses STANDIN_DEMOS below: eight biography-style
  sentences with their facts, written for the harness in the style FActScore asks for
  (recorded `stand_in: true` in the judged section);
- `eval.factscore_options.demos: PATH` reads FActScore's own demons.json (a JSON object:
  sentence -> list of facts, in file order), which restores the released prompt exactly.
The prompt uses the first 7 entries in order plus the BM25-nearest entry (prompts.py).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from factrl.harness.core.errors import ConfigError

FIXED = 7  # atomic_facts.py:103: n = 7 fixed demos for biographies (is_bio is always True, :23)
NEAREST = 1  # k = 1 BM25-nearest demo

STANDIN_DEMOS: dict[str, list[str]] = {
    "She was born in Lyon in 1921 and studied chemistry at the University of Paris.": [
        "She was born in Lyon.", "She was born in 1921.", "She studied chemistry.",
        "She studied at the University of Paris."],
    "He is an American novelist best known for his 1998 debut, The Quiet Harbor.": [
        "He is American.", "He is a novelist.", "His debut is The Quiet Harbor.",
        "The Quiet Harbor was published in 1998.", "He is best known for The Quiet Harbor."],
    "After retiring from football in 2009, Müller became a coach for the national youth team.": [
        "Müller retired from football.", "Müller retired in 2009.", "Müller became a coach.",
        "Müller coached the national youth team.", "Müller became a coach after retiring."],
    "The band released three studio albums, all produced by Tom Reyes.": [
        "The band released three studio albums.", "Tom Reyes produced the band's albums.",
        "Tom Reyes produced all three studio albums."],
    "She served as the mayor of Tampere from 1990 to 1998.": [
        "She served as a mayor.", "She was the mayor of Tampere.", "She was mayor from 1990.",
        "She was mayor until 1998."],
    "His research on bird migration earned him the Darwin Medal in 1975.": [
        "He did research on bird migration.", "He earned the Darwin Medal.",
        "He earned the Darwin Medal in 1975.", "His research earned him the Darwin Medal."],
    "Kowalski, a painter and sculptor, moved to New York City in the 1960s.": [
        "Kowalski is a painter.", "Kowalski is a sculptor.", "Kowalski moved to New York City.",
        "Kowalski moved in the 1960s."],
    "The film was directed by Ana Lima and won the Golden Shell at San Sebastián.": [
        "The film was directed by Ana Lima.", "The film won the Golden Shell.",
        "The Golden Shell is awarded at San Sebastián.", "The film won an award at San Sebastián."],
}


def load_demos(path: str | None) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(demos, provenance) for `eval.factscore_options.demos` (null = the stand-in)."""
    if path is None:
        demos, source = STANDIN_DEMOS, {"source": "harness stand-in (FActScore's demons.json is not in the "
                                                  "release snapshot)", "stand_in": True}
    else:
        file = Path(path).expanduser()
        try:
            demos = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"eval.factscore_options.demos={path}: cannot read a JSON file there ({exc}); give "
                              f"FActScore's demos/demons.json or null for the stand-in.") from None
        ok = isinstance(demos, dict) and all(isinstance(k, str) and isinstance(v, list) and
                                             all(isinstance(f, str) for f in v) for k, v in demos.items())
        if not ok or len(demos) < FIXED:
            raise ConfigError(f"eval.factscore_options.demos={path}: expected a JSON object of at least {FIXED} "
                              f"sentences, each with a list of fact strings (FActScore's demons.json).")
        source = {"source": str(file), "stand_in": False}
    digest = hashlib.sha256(json.dumps(demos, ensure_ascii=False).encode("utf-8")).hexdigest()
    return demos, {**source, "count": len(demos), "sha256": digest}

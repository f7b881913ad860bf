"""Bad input: a clear error or a recorded failure, never a segfault.

Damaged-index cases run in a child process (`run_isolated`): if the service let the
engine touch a bad file, the child would die by SIGSEGV and the test would fail, while
pytest itself keeps running.
"""
import json
import shutil

import pytest

from factrl.harness.services.corpus import build_index, open_counter
from factrl.harness.services.corpus.layout import MANIFEST
from factrl.harness.core.errors import ConfigError, HarnessError

from .conftest import corpus_cfg, run_isolated


def _truncate(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep) // 8 * 8 + (1 if keep else 0)])


# name -> (damage to apply to a private copy of the index, config overrides)
CASES = {
    "intact": (lambda d: None, {}),
    "truncated table": (lambda d: _truncate(d / "table.0", 0.5), {}),
    "truncated tokenized": (lambda d: _truncate(d / "tokenized.0", 0.5), {}),
    "truncated offset": (lambda d: _truncate(d / "offset.0", 0.5), {}),
    "empty table": (lambda d: _truncate(d / "table.0", 0.0), {}),
    "truncated table, no manifest": (lambda d: ((d / MANIFEST).unlink(), _truncate(d / "table.0", 0.9)),
                                     {"token_dtype": "u16"}),
    "missing table": (lambda d: (d / "table.0").unlink(), {}),
    "missing tokenized": (lambda d: (d / "tokenized.0").unlink(), {}),
    "missing offset": (lambda d: (d / "offset.0").unlink(), {}),
    "overwritten table": (lambda d: (d / "table.0").write_bytes(b"\xff" * (d / "table.0").stat().st_size), {}),
    "stray file": (lambda d: (d / "table.0.bak").write_bytes(b"junk"), {}),
    "u16 opened as u32": (lambda d: (d / MANIFEST).unlink(), {"token_dtype": "u32"}),
    "no manifest, u16": (lambda d: (d / MANIFEST).unlink(), {"token_dtype": "u16"}),
    "manifest says u16, config u32": (lambda d: None, {"token_dtype": "u32"}),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, built_index):
    """Open every damaged copy and count one query, all in one child process (loading a
    tokenizer costs seconds); each case prints one line before the next starts, so a
    segfault shows up as the missing line of the case that caused it."""
    root = tmp_path_factory.mktemp("damaged")
    jobs = []
    for i, (name, (damage, overrides)) in enumerate(CASES.items()):
        target = root / f"case{i}"
        shutil.copytree(built_index().path, target)
        damage(target)
        jobs.append((name, corpus_cfg(target, **overrides)))
    done = run_isolated(f"""
        import json
        from factrl.harness.services.corpus import open_counter
        from factrl.harness.services.corpus.tokens import load_index_tokenizer
        from factrl.harness.core.errors import HarnessError
        tokenizer = load_index_tokenizer("smollm2-135m")
        for name, cfg in {jobs!r}:
            try:
                with open_counter(cfg, tokenizer=tokenizer) as counter:
                    result = counter.count(["Castle", "Violin"])
                out = {{"count": result.count, "error": result.error}}
            except HarnessError as err:
                out = {{"harness_error": type(err).__name__, "message": str(err)}}
            print(json.dumps({{"case": name, **out}}), flush=True)
    """, timeout=300)
    found = {line["case"]: line for line in map(json.loads, done.stdout.strip().splitlines() if done.stdout else [])}
    return found, done


def _outcome(outcomes, name):
    found, done = outcomes
    assert name in found, f"child died before finishing '{name}' (status {done.returncode}): {done.stderr[-800:]}"
    return found[name]


def test_intact_copy_counts(outcomes):
    assert _outcome(outcomes, "intact")["count"] is not None
    assert _outcome(outcomes, "no manifest, u16")["count"] == _outcome(outcomes, "intact")["count"]


@pytest.mark.parametrize("name, file", [
    ("truncated table", "table.0"), ("truncated tokenized", "tokenized.0"), ("truncated offset", "offset.0"),
    ("empty table", "table.0"), ("truncated table, no manifest", "table.0"), ("missing table", "table.0"),
    ("missing tokenized", "tokenized.0"), ("missing offset", "offset.0"), ("overwritten table", "table.0"),
    ("stray file", "stray"), ("u16 opened as u32", "width"), ("manifest says u16, config u32", "u16"),
])
def test_damaged_index_is_a_clear_error(outcomes, name, file):
    out = _outcome(outcomes, name)
    assert out.get("harness_error") == "DataError", out
    assert file in out["message"], out["message"]


def test_index_built_with_another_tokenizer(built_index, tokenizers):
    with pytest.raises(HarnessError, match="built with tokenizer 'smollm2-135m'"):
        open_counter(corpus_cfg(built_index("smollm2-135m").path, "tiny-llama"))
    tok, _ = tokenizers["tiny-llama"]
    with pytest.raises(HarnessError, match="built with tokenizer"):
        open_counter(corpus_cfg(built_index("smollm2-135m").path, "smollm2-135m"), tokenizer=tok)


def test_missing_index_dir_and_bad_config(tmp_path):
    with pytest.raises(HarnessError, match="no such directory"):
        open_counter(corpus_cfg(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match="index_dir is not set"):
        open_counter(corpus_cfg("???"))
    with pytest.raises(ConfigError, match="corpus=none"):
        open_counter({"backend": "none"})
    with pytest.raises(ConfigError, match="backend"):
        open_counter({"backend": "elastic"})
    with pytest.raises(ConfigError, match="max_diff_tokens"):
        open_counter(corpus_cfg(tmp_path, max_diff_tokens=0))


def test_bad_queries_are_recorded_failures(built_index):
    with open_counter(corpus_cfg(built_index().path)) as counter:
        results = counter.count_many([
            [],  # empty
            ["Castle"],  # one term
            ["Castle", "castle "],  # one term twice after normalisation? no: case differs -> two terms
            ["Castle", ""],  # empty term
            "Castle AND Violin",  # a string, not a term list
            ["Castle", None],
            ["Castle"] * 3,  # duplicates collapse to one term
            ["Castle"] + [f"Word{i}" for i in range(40)],  # too many clauses
        ])
        ok = [r.ok for r in results]
        assert ok == [False, False, True, False, False, False, False, False]
        assert all(r.count is None and r.error for r, good in zip(results, ok) if not good)
        assert "at least 2" in results[1].error and "limit" in results[7].error


def test_punctuation_unicode_and_long_entities_count_or_fail_cleanly(built_index):
    from factrl.harness.services.corpus import build_query

    long_entity = " ".join(f"Name{i}" for i in range(500))
    with open_counter(corpus_cfg(built_index().path)) as counter:
        results = counter.count_many([
            ["Castle!", "?Violin"], ["Zürich", "東京"], ["🙂", "Castle"], ["C++", "Violin"],
            ["<|endoftext|>", "</s>"], ["Castle", "x" * 5000],
            build_query(long_entity, "Violin"),
        ])
    assert all(r.ok for r in results[:5]) and all(r.count == 0 for r in results[1:5])
    assert not results[5].ok and "tokens" in results[5].error  # a 5,000-character term
    assert not results[6].ok and "clauses" in results[6].error


def test_bad_corpus_inputs(tmp_path, tokenizers):
    from factrl.harness.core.errors import DataError

    tok, ident = tokenizers["smollm2-135m"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text field"}\n')
    with pytest.raises(DataError, match="bad.jsonl:2"):
        build_index(tmp_path / "i1", [str(bad)], tok, ident, force=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("   \n")
    with pytest.raises(DataError, match="no non-empty documents"):
        build_index(tmp_path / "i2", [str(empty)], tok, ident, force=False)
    with pytest.raises(DataError, match="no such file"):
        build_index(tmp_path / "i3", [str(tmp_path / "missing.jsonl")], tok, ident, force=False)
    assert not (tmp_path / "i1").exists()  # a failed build leaves nothing behind

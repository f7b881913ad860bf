"""The count cache: zeros cached, failures not, batches deduplicated, two writers at once."""
import subprocess
import sys
import textwrap
import time

from factrl.harness.services.corpus import open_counter
from factrl.harness.services.corpus.backends import Outcome
from factrl.harness.services.corpus.cache import CountCache
from factrl.harness.services.corpus.counter import Counter

from .conftest import corpus_cfg


class FakeBackend:
    """Counts by a rule and records every call, so tests can see what reached it."""

    name = "fake"

    def __init__(self):
        self.calls = []

    def params(self):
        return {"backend": "fake"}

    def count(self, clauses):
        self.calls.append(clauses)
        terms = [t for clause in clauses for t in clause]
        if "FAIL" in terms:
            return Outcome(None, error="engine: boom")
        if "ZERO" in terms:
            return Outcome(0)
        return Outcome(len("".join(terms)))

    def close(self):
        pass


def _counter(tmp_path, backend=None, index="idx"):
    cache = CountCache(tmp_path / "counts.sqlite3", index, "1")
    return Counter(backend or FakeBackend(), manifest_hash=index, cache=cache)


def test_batch_dedup_cache_first_and_order(tmp_path):
    counter = _counter(tmp_path)
    batch = [["Paris", "France"], ["Rome", "Italy"], ["Paris", "France"], ["Paris", " France "]]
    first = counter.count_many(batch)
    assert [r.count for r in first] == [11, 9, 11, 11]
    assert len(counter.backend.calls) == 2  # duplicates (after normalisation) counted once
    assert not any(r.cached for r in first)
    second = counter.count_many(batch + [["Oslo", "Norway"]])
    assert [r.cached for r in second] == [True, True, True, True, False]
    assert len(counter.backend.calls) == 3
    stats = counter.stats()
    assert stats["queries"] == 9 and stats["cache_hits"] == 4 and stats["backend_calls"] == 3


def test_zero_is_cached_failure_is_not(tmp_path):
    counter = _counter(tmp_path)
    zero, fail = counter.count_many([["ZERO", "x"], ["FAIL", "x"]])
    assert zero.ok and zero.count == 0
    assert not fail.ok and fail.count is None and fail.error == "engine: boom"
    again = counter.count_many([["ZERO", "x"], ["FAIL", "x"]])
    assert again[0].cached and not again[1].cached
    assert len(counter.backend.calls) == 3  # the failure was tried again
    # a new process (new Counter, same file) sees the zero and not the failure
    fresh = _counter(tmp_path)
    assert fresh.count(["ZERO", "x"]).cached and not fresh.count(["FAIL", "x"]).cached


def test_keys_include_index_and_params(tmp_path):
    a = _counter(tmp_path, index="index-a")
    a.count(["Paris", "France"])
    b = _counter(tmp_path, index="index-b")
    assert not b.count(["Paris", "France"]).cached  # another index: not shared
    other_params = FakeBackend()
    other_params.params = lambda: {"backend": "fake", "max_diff_tokens": 5}
    assert not _counter(tmp_path, other_params, index="index-a").count(["Paris", "France"]).cached
    assert _counter(tmp_path, index="index-a").count(["Paris", "France"]).cached


WRITER = textwrap.dedent("""
    import sys, time
    from factrl.harness.services.corpus.cache import CountCache
    path, me, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cache = CountCache(path, "idx", "1")
    while time.time() < start:
        time.sleep(0.001)
    for i in range(300):
        # half the keys are shared with the other writer, half are this writer's own
        key = f"shared-{i}" if i % 2 else f"{me}-{i}"
        cache.put_many({(key, "p"): (i, False)})
        if i % 10 == 0:
            cache.put_many({(f"{me}-batch-{i}-{j}", "p"): (j, False) for j in range(50)})
    print("done")
""")


def test_two_processes_write_at_once(tmp_path):
    path = tmp_path / "shared.sqlite3"
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0 and out.strip() == "done", err[-800:]
    cache = CountCache(path, "idx", "1")
    expected = 2 * (150 + 30 * 50) + 150  # own keys, own batches, shared keys once
    assert cache.size() == expected
    got = cache.get_many([("shared-7", "p"), ("a-8", "p"), ("b-batch-20-3", "p")])
    assert got == {("shared-7", "p"): (7, False), ("a-8", "p"): (8, False), ("b-batch-20-3", "p"): (3, False)}


def test_real_counter_uses_the_cache_across_openings(tmp_path, built_index):
    cfg = corpus_cfg(built_index().path, cache=True, cache_path=str(tmp_path / "c.sqlite3"))
    with open_counter(cfg) as counter:
        first = counter.count_many([["Castle", "Violin"], ["Castle", "Qwxzptlk"]])
        assert not any(r.cached for r in first) and first[1].count == 0
    with open_counter(cfg) as counter:
        again = counter.count_many([["Castle", "Violin"], ["Castle", "Qwxzptlk"]])
        assert all(r.cached for r in again) and [r.count for r in again] == [r.count for r in first]
        assert counter.stats()["backend_calls"] == 0

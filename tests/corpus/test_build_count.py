"""Build small indexes from text the test writes; counts against an independent count."""
import itertools
import json

import numpy as np
import pytest

from factrl.harness.services.corpus import build_index, inspect_index, open_counter
from factrl.harness.services.corpus.layout import MANIFEST

from .conftest import KEYWORDS, corpus_cfg, independent_count

PAIRS = list(itertools.combinations(KEYWORDS, 2))


def test_manifest_records_identity_width_counts_and_hashes(built_index, tokenizers, corpus_docs):
    info = built_index("smollm2-135m")
    manifest = json.loads((info.path / MANIFEST).read_text())
    assert manifest["token_dtype"] == "u16" and manifest["token_width"] == 2
    assert manifest["tokenizer"]["fingerprint"] == tokenizers["smollm2-135m"][1].fingerprint
    assert manifest["documents"] == len(corpus_docs) == info.documents
    data = np.fromfile(info.path / "tokenized.0", dtype="<u2")
    assert manifest["tokens"] == len(data) == info.tokens
    assert np.count_nonzero(data == 0xFFFF) == len(corpus_docs)  # one separator per document
    assert len(manifest["corpus"]["sha256"]) == 64 and manifest["hash"] == info.manifest_hash
    assert manifest["build"]["created"] and manifest["build"]["verified"] is True
    assert manifest["build"]["cpus"] == 1  # small corpus: one CPU, whatever was asked


@pytest.mark.parametrize("spec", ["smollm2-135m", "tiny-llama"])
def test_counts_match_independent_count(built_index, corpus_docs, spec):
    info = built_index(spec)
    with open_counter(corpus_cfg(info.path, spec)) as local, \
            open_counter(corpus_cfg(info.path, spec, backend="exact")) as exact:
        queries = [list(p) for p in PAIRS]
        got_local = local.count_many(queries)
        got_exact = exact.count_many(queries)
    expected = [independent_count(corpus_docs, a, b) for a, b in PAIRS]
    assert sum(expected) > 20 and sum(1 for e in expected if e == 0) < len(expected)
    assert [r.count for r in got_local] == expected
    assert [r.count for r in got_exact] == expected
    assert all(r.ok and not r.approx for r in got_local)


def test_single_word_counts_and_or_alternatives(built_index, corpus_docs):
    info = built_index()
    with open_counter(corpus_cfg(info.path)) as counter:
        for word in KEYWORDS[:3]:
            truth = sum(words.count(word) for words in corpus_docs)
            assert counter.count_cnf([[word]]).count == truth
        a, b, c = KEYWORDS[:3]
        either = counter.count_cnf(f"{a} AND {b} OR {c}").count
        assert either == independent_count(corpus_docs, a, b) + independent_count(corpus_docs, a, c)


def test_case_variants_option(built_index, corpus_docs):
    info = built_index()
    word = KEYWORDS[0]
    truth = sum(words.count(word) for words in corpus_docs)
    with open_counter(corpus_cfg(info.path)) as plain, \
            open_counter(corpus_cfg(info.path, case_variants=True)) as variants:
        assert plain.count_cnf([[word.lower()]]).count == 0  # the corpus writes it capitalised
        assert variants.count_cnf([[word.lower()]]).count == truth


def test_unknown_word_counts_zero_and_is_a_success(built_index):
    with open_counter(corpus_cfg(built_index().path)) as counter:
        result = counter.count(["Castle", "Qwxzptlk"])
        assert result.ok and result.count == 0


def test_engine_undercounts_short_documents_exact_does_not(tmp_path, tokenizers):
    """docs/PROTOCOL.md §2: the engine drops matches whose window straddles a document boundary."""
    docs = tmp_path / "short.txt"
    docs.write_text("\n".join(["A story about Castle and Violin here."] * 50))
    tok, ident = tokenizers["smollm2-135m"]
    info = build_index(tmp_path / "short-idx", [str(docs)], tok, ident, split_lines=True, force=False)
    cfg = corpus_cfg(info.path, max_diff_tokens=1000)
    with open_counter(cfg) as local, open_counter({**cfg, "backend": "exact"}) as exact:
        engine, true = local.count(["Castle", "Violin"]).count, exact.count(["Castle", "Violin"]).count
    assert true == 50 and engine < true


def test_plain_text_files_and_u16_width(tmp_path, tokenizers):
    folder = tmp_path / "txt"
    folder.mkdir()
    (folder / "a.txt").write_text("The Falcon flew over the Harbor at dawn.")
    (folder / "b.txt").write_text("An Orchid grew near the Harbor.")
    tok, ident = tokenizers["tiny-llama"]
    info = build_index(tmp_path / "txt-idx", [str(folder)], tok, ident, force=False)
    assert info.documents == 2 and info.token_dtype == "u16"
    cfg = corpus_cfg(info.path, "tiny-llama", max_diff_tokens=1000)
    with open_counter(cfg) as local, open_counter({**cfg, "backend": "exact"}) as exact:
        assert local.count(["Harbor", "Falcon"]).count == 1
        assert local.count(["Falcon", "Orchid"]).count == 0
        # Orchid's window reaches the Harbor of the previous document too: the engine drops
        # the match (docs/PROTOCOL.md §2), the exact counter keeps it.
        assert local.count(["Harbor", "Orchid"]).count == 0
        assert exact.count(["Harbor", "Orchid"]).count == 1


def test_build_reuses_existing_index_and_force_rebuilds(tmp_path, tokenizers):
    src = tmp_path / "one.txt"
    src.write_text("Comet and Marble.")
    tok, ident = tokenizers["smollm2-135m"]
    first = build_index(tmp_path / "idx", [str(src)], tok, ident, force=False)
    again = build_index(tmp_path / "idx", [str(src)], tok, ident, force=False)
    assert again.manifest["build"]["created"] == first.manifest["build"]["created"]
    rebuilt = build_index(tmp_path / "idx", [str(src)], tok, ident, force=True)
    assert rebuilt.manifest_hash == first.manifest_hash  # same content, same hash
    other_tok, other_ident = tokenizers["tiny-llama"]
    from factrl.harness.core.errors import HarnessError

    with pytest.raises(HarnessError, match="another tokenizer"):
        build_index(tmp_path / "idx", [str(src)], other_tok, other_ident, force=False)


def test_index_path_containing_engine_words(tmp_path, tokenizers):
    """The engine misreads paths containing 'table'; the service hands it a clean symlink."""
    src = tmp_path / "one.txt"
    src.write_text("The Tiger met the Falcon.")
    tok, ident = tokenizers["smollm2-135m"]
    info = build_index(tmp_path / "timetable" / "offset-idx", [str(src)], tok, ident, force=False)
    assert inspect_index(info.path).documents == 1
    with open_counter(corpus_cfg(info.path, max_diff_tokens=1000)) as counter:
        assert counter.count(["Tiger", "Falcon"]).count == 1



def _wordlevel_tokenizer(size: int):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[EOS]": 1, **{f"w{i}": i + 2 for i in range(size)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", eos_token="[EOS]")


def test_u32_build_chooses_u32_or_explains_the_memory_it_needs(tmp_path):
    """The bundled builder needs 32 GiB per job for u32; a smaller machine gets a clear error."""
    from factrl.harness.services.corpus.build import _available_memory, sort_memory
    from factrl.harness.services.corpus.tokens import identify
    from factrl.harness.core.errors import HarnessError

    tok = _wordlevel_tokenizer(70_000)
    src = tmp_path / "big.txt"
    src.write_text("w69990 w5 w69991")
    if _available_memory() < sort_memory(4):
        with pytest.raises(HarnessError, match="GiB of free memory"):
            build_index(tmp_path / "u32", [str(src)], tok, identify(tok, "wordlevel-70k"), force=False)
        assert not (tmp_path / "u32").exists()
    else:  # pragma: no cover - only on machines with more than 32 GiB free
        info = build_index(tmp_path / "u32", [str(src)], tok, identify(tok, "wordlevel-70k"), force=False)
        assert info.token_dtype == "u32"


def test_u32_index_written_by_the_test_counts(tmp_path):
    """A u32 index (ids above 65,535) built by plain Python here: the engine's u32 path,
    the width checks and the counter agree with a direct count."""
    import math

    tok = _wordlevel_tokenizer(70_000)
    filler = [f"w{i}" for i in range(100, 140)]
    docs = [filler + ["w69990", "w5", "w69991"] + filler, filler + ["w69990"] + filler]
    data = bytearray()
    offsets = []
    for words in docs:
        offsets.append(len(data))
        ids = tok(" ".join(words), add_special_tokens=False)["input_ids"]
        data += b"\xff" * 4 + np.asarray(ids, dtype="<u4").tobytes()
    data = bytes(data)
    ptr_bytes = max(1, math.ceil(math.log2(len(data)) / 8))
    order = sorted(range(0, len(data), 4), key=lambda p: data[p:])  # byte order, as the engine compares
    index = tmp_path / "u32-by-hand"
    index.mkdir()
    (index / "tokenized.0").write_bytes(data)
    (index / "offset.0").write_bytes(np.asarray(offsets, dtype="<u8").tobytes())
    (index / "table.0").write_bytes(b"".join(p.to_bytes(8, "little")[:ptr_bytes] for p in order))
    cfg = corpus_cfg(index, "unused", max_diff_tokens=10, token_dtype="u32")
    with open_counter(cfg, tokenizer=tok) as counter:
        assert counter.description["token_dtype"] == "u32"
        assert counter.count_cnf([["w69990"]]).count == 2
        assert counter.count(["w69990", "w69991"]).count == 1
        assert counter.count(["w69990", "w12345"]).count == 0
    from factrl.harness.core.errors import DataError

    with pytest.raises(DataError, match="width"):
        open_counter({**cfg, "token_dtype": "u16"}, tokenizer=tok)

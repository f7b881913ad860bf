"""Index format 2: documents are stored as running text, so a document's first word is found.

Byte-level BPE (SmolLM2, Qwen, Llama-3) writes no boundary mark on a string's first word
("Paris" vs "ĠParis" mid-text), while queries are encoded mid-text; format 1 stored that
first word unmarked and no query found it. SentencePiece (Llama-2) marks the first word
itself and must store exactly the ids it stored before.
"""
import json
import logging

import numpy as np
import pytest

from factrl.harness.services.corpus import build_index, open_counter
from factrl.harness.services.corpus.layout import MANIFEST
from factrl.harness.services.corpus.tokens import TermEncoder, encode_texts, marks_first_word
from factrl.harness.core.errors import HarnessError

from .conftest import FILLER, corpus_cfg

SUBJECT = "Madagascar"


@pytest.fixture(scope="session")
def all_tokenizers(tokenizers):
    """SmolLM2 and a real Qwen vocabulary (byte-level BPE), tiny-llama (SentencePiece)."""
    from factrl.harness.services.corpus.tokens import identify

    from ..corver.tiny_qwen import qwen_tokenizer_fast

    qwen = qwen_tokenizer_fast()
    return {**tokenizers, "tiny-qwen": (qwen, identify(qwen, "tiny-qwen"))}


def _lead_sections() -> list[str]:
    """Three documents that begin with the subject (as every Wikipedia lead section does),
    two that name it in running text, one without it; the pair word is 4 words away and
    every document is long enough that no window reaches a neighbour."""
    pad = " ".join(FILLER * 2)
    return ([f"{SUBJECT} is an island of the Falcon coast. {pad}" for _ in range(3)]
            + [f"{pad} the port of {SUBJECT} faces the Falcon coast. {pad}" for _ in range(2)]
            + [pad, f"(1964) {pad}", f"\n{SUBJECT} on a new line. {pad}"])


def _write(tmp_path, texts) -> str:
    path = tmp_path / "lead.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return str(path)


def _stored_documents(index_dir, width=2) -> list[list[int]]:
    data = np.fromfile(index_dir / "tokenized.0", dtype="<u2" if width == 2 else "<u4")
    docs, current = [], None
    for token in data.tolist():
        if token == (1 << (8 * width)) - 1:
            current = []
            docs.append(current)
        else:
            current.append(token)
    return docs


def test_tokenizer_kinds_are_told_apart(all_tokenizers):
    kinds = {spec: marks_first_word(tok) for spec, (tok, _) in all_tokenizers.items()}
    assert kinds == {"smollm2-135m": False, "tiny-qwen": False, "tiny-llama": True}


@pytest.mark.parametrize("spec", ["smollm2-135m", "tiny-qwen", "tiny-llama"])
@pytest.mark.parametrize("backend", ["local", "exact"])
def test_first_word_of_a_document_counts(tmp_path, all_tokenizers, spec, backend):
    tok, ident = all_tokenizers[spec]
    info = build_index(tmp_path / "idx", [_write(tmp_path, _lead_sections())], tok, ident, force=False)
    cfg = corpus_cfg(info.path, spec, backend=backend, max_diff_tokens=20)
    with open_counter(cfg, tokenizer=tok) as counter:
        # 3 first words + 2 in running text; the one after a newline is not word-initial
        # mid-text either (a newline is its own boundary), so it is not expected.
        assert counter.count_cnf([[SUBJECT]]).count == 5
        assert counter.count([SUBJECT, "Falcon"]).count == 5


@pytest.mark.parametrize("spec", ["smollm2-135m", "tiny-qwen", "tiny-llama"])
def test_stored_ids_are_the_running_text_ids(tmp_path, all_tokenizers, spec):
    """SentencePiece: byte-identical to the format-1 ids (the tokenizer's own encoding of
    the document). Byte-level BPE: the ids the document gets after a space, so its first
    word has the ids the query encoder gives it."""
    tok, ident = all_tokenizers[spec]
    texts = _lead_sections()
    info = build_index(tmp_path / "idx", [_write(tmp_path, texts)], tok, ident, force=False)
    stored = _stored_documents(info.path)
    old_way = encode_texts(tok, texts)
    if marks_first_word(tok):
        assert stored == old_way
        assert info.manifest["document_prefix"] == ""
    else:
        assert stored == [encode_texts(tok, [t if t[0].isspace() else " " + t])[0] for t in texts]
        assert stored[0] != old_way[0] and stored[-1] == old_way[-1]  # a newline-led text is unchanged
        assert info.manifest["document_prefix"] == " "
    subject = list(TermEncoder(tok, 0xFFFE).encode(SUBJECT))
    assert all(doc[:len(subject)] == subject for doc in stored[:3])
    assert info.manifest["format_version"] == "2"


def _age(index_dir) -> None:
    """Make a built index look like one written by format 1 (the manifest is what says so)."""
    path = index_dir / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["format_version"] = "1"
    manifest.pop("document_prefix", None)
    path.write_text(json.dumps(manifest))


def test_old_byte_level_index_is_refused_with_the_rebuild_command(tmp_path, all_tokenizers):
    tok, ident = all_tokenizers["smollm2-135m"]
    source = _write(tmp_path, _lead_sections())
    info = build_index(tmp_path / "old-idx", [source], tok, ident, force=False)
    _age(info.path)
    with pytest.raises(HarnessError) as caught:
        open_counter(corpus_cfg(info.path), tokenizer=tok)
    message = str(caught.value)
    assert "\n" not in message and str(info.path) in message and "harness index build" in message
    assert "--force" in message and source in message
    # Building into it again without --force refuses too; --force rebuilds it in format 2.
    with pytest.raises(HarnessError, match="--force"):
        build_index(info.path, [source], tok, ident, force=False)
    rebuilt = build_index(info.path, [source], tok, ident, force=True)
    assert rebuilt.manifest["format_version"] == "2"
    with open_counter(corpus_cfg(info.path), tokenizer=tok) as counter:
        assert counter.count_cnf([[SUBJECT]]).count == 5


def test_old_sentencepiece_index_still_counts_with_a_warning(tmp_path, all_tokenizers, caplog):
    tok, ident = all_tokenizers["tiny-llama"]
    info = build_index(tmp_path / "old-sp", [_write(tmp_path, _lead_sections())], tok, ident, force=False)
    _age(info.path)
    with caplog.at_level(logging.WARNING, logger="factrl.harness.services.corpus"):
        with open_counter(corpus_cfg(info.path, "tiny-llama"), tokenizer=tok) as counter:
            assert counter.count_cnf([[SUBJECT]]).count == 5
        again = build_index(info.path, [str(tmp_path / "lead.jsonl")], tok, ident, force=False)
        assert again.manifest["format_version"] == "1"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and all(str(info.path) in w and "harness index build" in w for w in warnings)


def test_stale_demo_index_is_rebuilt(tmp_path, monkeypatch, all_tokenizers):
    """The demo index lives in the harness cache: one written by format 1 is rebuilt on
    first use instead of being reused (a new format also moves it to a new directory)."""
    from factrl.harness.services.corpus import build as build_module
    from factrl.harness.services.corpus import ensure_demo_index, sources

    summaries = tmp_path / "summaries.json"
    summaries.write_text(json.dumps({f"t{i}": {"title": f"t{i}", "extract": text}
                                     for i, text in enumerate(_lead_sections())}))
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sources, "demo_corpus_path", lambda: summaries)
    tok, ident = all_tokenizers["smollm2-135m"]
    first = ensure_demo_index(tok, ident)
    assert first.manifest["format_version"] == "2"
    _age(first.path)
    again = ensure_demo_index(tok, ident)
    assert again.path == first.path and again.manifest["format_version"] == "2"
    here = build_module.demo_index_dir(ident)
    monkeypatch.setattr(build_module, "FORMAT_VERSION", "1")
    assert build_module.demo_index_dir(ident) != here

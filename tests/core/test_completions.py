"""Completion parsing, sentence splitting and token-to-sentence alignment (docs/PROTOCOL.md §1)."""
from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factrl.harness.core import completions as comp

MULTIBYTE = ("<think>Café 日本 🎉 was here. Dr. Smith was born in 1.5 Paris!  Ünïcödé 😀😀 end?</think> "
             "<answer>Paris 日本</answer>")


def _tokenizer(name):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose([f"model={name}"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


@pytest.fixture(scope="module", params=["tiny-llama", "smollm2-135m"])
def tokenizer(request):
    return _tokenizer(request.param)


def _split_noncanonical(tok, ids, seed=0):
    """The same text as other token ids: split tokens into two vocabulary pieces where possible,
    as a sampled policy often does. Re-tokenising the decoded text no longer gives these ids."""
    rng, vocab, out = random.Random(seed), tok.get_vocab(), []
    for i in ids:
        piece = tok.convert_ids_to_tokens(i)
        cuts = [(piece[:c], piece[c:]) for c in range(1, len(piece)) if piece[:c] in vocab and piece[c:] in vocab]
        if cuts and rng.random() < 0.7:
            a, b = rng.choice(cuts)
            out += [vocab[a], vocab[b]]
        else:
            out.append(i)
    return out


# --------------------------------------------------------------------------- sections
@pytest.mark.parametrize("text, expected", [
    ("<think>A b. C d.</think> <answer>Paris</answer>", [("think", "A b. C d.", True), ("answer", "Paris", True)]),
    ("A b.</think><answer>x</answer>", [("think", "A b.", True), ("answer", "x", True)]),  # template opened it
    ("<think>cut off. More", [("think", "cut off. More", False)]),
    ("<think>t</think><answer>a</answer> junk <answer>b</answer>", [("think", "t", True), ("answer", "b", True)]),
    ("<think>t</think><answer>a</answer><answer>trunc", [("think", "t", True), ("answer", "a", True)]),
    ("<answer>no think", [("answer", "no think", False)]),
    ("<THINK>upper</THINK><Answer>x</Answer>", [("think", "upper", True), ("answer", "x", True)]),
    ("no tags at all.", []),
])
def test_sections(text, expected):
    got = [(s.name, text[s.start:s.end], s.closed) for s in comp.find_sections(text)]
    assert got == expected


def test_answer_section_is_the_block_the_evaluator_judges():
    from factrl.harness.core.answers import extract_answer

    for text in ["<think>t</think><answer>a</answer> x <answer>b</answer>", "<answer>a</answer><answer>tr",
                 "<think>x</think><answer> Paris </answer>"]:
        answer = [s for s in comp.find_sections(text) if s.name == "answer"][0]
        assert text[answer.start:answer.end].strip() == extract_answer(text).answer


# --------------------------------------------------------------------------- splitting
def test_reference_splitter_breaks_after_terminal_punctuation_only():
    text = "Dr. Smith was born in 1.5 Paris! Really? Yes.  U.S. troops left.Next"
    got = [text[a:b] for a, b in comp.split_sentences(text)]
    assert got == ["Dr.", "Smith was born in 1.5 Paris!", "Really?", "Yes.", "U.S.", "troops left.Next"]


def test_abbreviation_splitter_keeps_titles_and_initials():
    text = "Dr. Smith met George F. Simon in the U.S. in 1990. Then he left."
    got = [text[a:b] for a, b in comp.split_sentences(text, splitter="abbreviations")]
    assert got == ["Dr. Smith met George F. Simon in the U.S. in 1990.", "Then he left."]
    with pytest.raises(ValueError):
        comp.split_sentences(text, splitter="nltk")


def test_reasoning_and_answer_are_split_separately():
    text = "<think>It is Paris.</think><answer>Paris. Final</answer>"
    sents = comp.sentences_of(text)
    assert [(s.section, s.text) for s in sents] == [("think", "It is Paris."), ("answer", "Paris."),
                                                    ("answer", "Final")]
    assert [s.index for s in sents] == [0, 1, 2]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t1é日😀")), max_size=60),
       st.sampled_from(comp.SPLITTERS))
def test_splitter_properties(text, splitter):
    spans = comp.split_sentences(text, splitter=splitter)
    covered = set()
    for (a, b), nxt in zip(spans, spans[1:] + [(len(text), len(text))]):
        piece = text[a:b]
        assert piece and piece == piece.strip()  # stripped, non-empty
        assert b <= nxt[0]  # ordered, disjoint
        covered.update(range(a, b))
        if splitter == "reference":
            assert not re.search(r"[.!?]\s", piece)  # never holds a break inside
    # every non-space character belongs to a sentence
    assert {i for i, ch in enumerate(text) if not ch.isspace()} <= covered


# --------------------------------------------------------------------------- spans and sigma
def test_offsets_incremental_and_prefix_agree_on_multibyte_text(tokenizer):
    ids = tokenizer(MULTIBYTE, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    got = {m: comp.align(tokenizer, ids, method=m) for m in ("offsets", "incremental", "prefix")}
    assert got["offsets"].method == "offsets"
    assert got["offsets"].text == MULTIBYTE
    assert got["offsets"].spans == got["incremental"].spans == got["prefix"].spans
    assert got["offsets"].sigma == got["incremental"].sigma == got["prefix"].sigma
    assert got["offsets"].spans[-1] is None and got["offsets"].sigma[-1] is None  # EOS


def test_noncanonical_ids_use_exact_incremental_spans(tokenizer):
    canonical = tokenizer(MULTIBYTE, add_special_tokens=False).input_ids
    ids = _split_noncanonical(tokenizer, canonical)
    assert ids != canonical
    auto = comp.align(tokenizer, ids)
    assert auto.method == "incremental"  # offsets do not round-trip
    assert auto.text == MULTIBYTE
    assert auto.spans == comp.align(tokenizer, ids, method="prefix").spans
    with pytest.raises(ValueError):
        comp.token_spans(tokenizer, ids, method="offsets")
    # Spans tile the text: each token's complete characters follow the previous token's.
    ends = 0
    for k, (a, b) in enumerate(auto.spans):
        assert a <= ends <= b
        ends = max(ends, b)
    assert ends == len(MULTIBYTE)
    # Each token maps to the sentence most of its characters belong to.
    owner = {c: s.index for s in auto.sentences for c in range(s.start, s.end)}
    for (a, b), s in zip(auto.spans, auto.sigma):
        inside = [owner[c] for c in range(a, b) if c in owner]
        assert s == (max(set(inside), key=inside.count) if inside else None)


class _NoOffsets:
    """A tokenizer without character offsets (a slow tokenizer): only decode and special ids."""

    is_fast = False

    def __init__(self, inner):
        self.inner = inner
        self.all_special_ids = inner.all_special_ids

    def decode(self, ids, **kwargs):
        return self.inner.decode(ids, **kwargs)


def test_tokenizer_without_offsets_uses_incremental_decoding(tokenizer):
    ids = tokenizer(MULTIBYTE, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    slow = comp.align(_NoOffsets(tokenizer), ids)
    fast = comp.align(tokenizer, ids)
    assert (slow.method, fast.method) == ("incremental", "offsets")
    assert slow.text == fast.text == MULTIBYTE
    assert slow.spans == fast.spans and slow.sigma == fast.sigma


def test_sigma_semantics_tags_whitespace_eos_and_outside_text(tokenizer):
    text = "preamble. <think>One fact.  Two facts.</think>\n<answer>Paris</answer> trailing."
    ids = tokenizer(text, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    al = comp.align(tokenizer, ids)
    assert [s.text for s in al.sentences] == ["One fact.", "Two facts.", "Paris"]
    owner = {c: s.index for s in al.sentences for c in range(s.start, s.end)}
    for span, s, tid in zip(al.spans, al.sigma, ids):
        if span is None:  # EOS
            assert s is None and tid == tokenizer.eos_token_id
            continue
        inside = [owner[c] for c in range(*span) if c in owner]
        if not inside:  # tags, whitespace between sentences, text outside the tags
            assert s is None, al.text[span[0]:span[1]]
        else:
            assert s == max(set(inside), key=lambda i: (inside.count(i), -i))
    assert al.sigma.count(None) >= 1 + len("preamble trailing".split())


def test_alignment_rate_and_threshold(tokenizer):
    no_tags = tokenizer("Paris is in France.", add_special_tokens=False).input_ids
    al = comp.align(tokenizer, no_tags)
    assert al.sentences == [] and al.rate == 0.0 and not al.usable()
    good = tokenizer("<think>Paris is in France.</think><answer>Paris</answer>", add_special_tokens=False).input_ids
    al = comp.align(tokenizer, good)
    assert al.rate == 1.0 and al.usable(0.5) and al.usable(1.0)
    spaced = tokenizer("<think>A.\n\n\n\n\n\n\n\n\n\n\n\n \n \n \n \n \n \n \n \n B.</think>",
                       add_special_tokens=False).input_ids
    al = comp.align(tokenizer, spaced)
    assert 0 < al.rate < 1.0
    assert al.usable(0.0) and not al.usable(0.99)


def test_truncated_multibyte_character_at_the_end(tokenizer):
    ids = tokenizer("<think>Tokyo 😀", add_special_tokens=False).input_ids
    cut = ids[:-1]  # the emoji's last byte is missing
    al = comp.align(tokenizer, cut)
    assert al.method in ("incremental", "prefix", "offsets")
    assert all(span is not None for span in al.spans)
    assert al.spans[-1][1] == len(al.text)


_PIECES = list("ab AB.!?\n1é日😀<>/") + ["<think>", "</think>", "<answer>", "</answer>", "Ünï", "\ufffd", "\u0301"]
_TOKENIZERS: dict = {}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.sampled_from(["tiny-llama", "smollm2-135m"]),
       st.integers(0, 10**6))
def test_all_span_methods_agree_on_random_text(parts, name, seed):
    """Offsets (canonical ids), incremental and prefix decoding (split and truncated ids)."""
    tok = _TOKENIZERS.get(name) or _TOKENIZERS.setdefault(name, _tokenizer(name))
    text = "".join(parts)
    ids = tok(text, add_special_tokens=False).input_ids
    if not ids:
        return
    sigmas = {m: comp.align(tok, ids, method=m).sigma for m in ("incremental", "prefix")}
    assert sigmas["incremental"] == sigmas["prefix"]
    try:  # canonical ids almost always round-trip; when they do, offsets agree too
        assert comp.align(tok, ids, method="offsets").sigma == sigmas["prefix"]
    except ValueError:
        pass
    split = _split_noncanonical(tok, ids, seed)
    for variant in (split, split[:-1]):
        if variant:
            assert comp.align(tok, variant).sigma == comp.align(tok, variant, method="prefix").sigma


def test_token_returns_formula():
    sigma = [None, 0, 0, None, 1, None]
    assert comp.token_returns(sigma, 3.0, [0.1, -0.2], 1.0) == pytest.approx([3.0, 3.1, 3.1, 3.0, 2.8, 3.0])
    assert comp.token_returns(sigma, 3.0, [0.1, -0.2], 2.0) == pytest.approx([3.0, 3.2, 3.2, 3.0, 2.6, 3.0])
    assert comp.token_returns(sigma, 3.0, [0.1, -0.2], 0.0) == [3.0] * 6  # lambda_c = 0: plain GRPO
    assert comp.token_returns(sigma, -2.0, None) == [-2.0] * 6


def test_token_returns_weight_keyword_and_its_former_name():
    """The sentence weight is `weight` (CorVer passes its lambda_c positionally); `lambda_c=`, the
    keyword's former name, gives the same numbers; both at once, or sentence rewards without a
    weight, are errors."""
    sigma = [None, 0, 0, None, 1, None]
    expected = [3.0, 3.1, 3.1, 3.0, 2.8, 3.0]
    assert comp.token_returns(sigma, 3.0, [0.1, -0.2], weight=1.0) == pytest.approx(expected)
    assert comp.token_returns(sigma, 3.0, [0.1, -0.2], lambda_c=1.0) == pytest.approx(expected)
    with pytest.raises(TypeError, match="once"):
        comp.token_returns(sigma, 3.0, [0.1, -0.2], 1.0, lambda_c=1.0)
    with pytest.raises(ValueError, match="pass weight"):
        comp.token_returns(sigma, 3.0, [0.1, -0.2])

"""Reward placement helpers: the bit-parallel LCS equals the textbook table; tokens of a
sentence from the core's alignment; the statement's token stays inside its sentence."""
from __future__ import annotations

import random

from factrl.harness.completions import align
from factrl.methods.rlfh.placement import lcs_last_char, lcs_length, sentence_tokens, statement_token


def table_lcs(a: str, b: str) -> tuple[int | None, int]:
    a, b = a.casefold().rstrip(" \t\n.!?;:,"), b.casefold()
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            t[i + 1][j + 1] = t[i][j] + 1 if x == y else max(t[i][j + 1], t[i + 1][j])
    best = t[-1][-1]
    return (min(j for j in range(len(b) + 1) if t[-1][j] == best) - 1 if best else None), best


def test_bit_parallel_lcs_equals_the_table():
    rng = random.Random(7)
    for _ in range(2000):
        a = "".join(rng.choice("abcA .") for _ in range(rng.randint(0, 14)))
        b = "".join(rng.choice("abcdB .") for _ in range(rng.randint(0, 18)))
        end, length = table_lcs(a, b)
        assert lcs_last_char(a, b) == end and lcs_length(a, b) == length, (a, b)


def test_earliest_ending_match_ignores_the_statements_final_period():
    sentence = "Curie was born in Warsaw and died in Passy."
    assert sentence[lcs_last_char("Curie was born in Warsaw.", sentence)] == "w"  # "Warsaw", not the final "."
    assert lcs_last_char("xyz", "abc") is None


def test_statement_token_is_inside_its_sentence(tokenizer):
    text = "<think>Curie was born in Warsaw. Zzz qqq.</think><answer>Warsaw</answer>"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    al = align(tokenizer, ids)
    first, last = sentence_tokens(al.sigma, 0)
    token, located = statement_token(al, al.sentences[0], "Curie was born in Warsaw.")
    assert located and first <= token <= last and tokenizer.decode([ids[token]]).strip() == "Warsaw"
    # no shared character: the sentence's last token
    assert statement_token(al, al.sentences[1], "###") == (sentence_tokens(al.sigma, 1)[1], False)
    assert statement_token(al, al.sentences[0], "Curie", granularity="sentence") == (last, False)


def test_prefix_is_put_back_and_untagged_text_is_read_whole(tokenizer):
    from factrl.methods.rlfh.alignment import align_response

    cut = "Curie was born in Warsaw. She won"  # SmolLM2 starts inside <think>; cut at the limit
    ids = tokenizer(cut, add_special_tokens=False)["input_ids"]
    assert not align(tokenizer, ids).sentences  # the core alone sees no section
    prefix = tokenizer("<think>", add_special_tokens=False)["input_ids"]
    al = align_response(tokenizer, ids, prefix_ids=prefix)
    assert [s.text for s in al.sentences] == ["Curie was born in Warsaw.", "She won"]
    assert al.sections[0].name == "think" and len(al.sigma) == len(ids) == len(al.spans)
    assert al.text[al.spans[0][0]:al.spans[0][1]].strip() == "Cur"  # spans index the text with its prefix
    assert al.usable(0.5)
    whole = align_response(tokenizer, ids)
    assert whole.sections[0].name == "response" and len(whole.sentences) == 2 and whole.rate == 1.0

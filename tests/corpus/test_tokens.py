"""Words as the index's tokenizer writes them inside running text."""
import pytest

from factrl.harness.services.corpus.tokens import TermEncoder, encode_texts, token_dtype_for


@pytest.mark.parametrize("spec, boundary", [("smollm2-135m", "Ġ"), ("tiny-llama", "▁")])
def test_word_initial_form(tokenizers, spec, boundary):
    tok, _ = tokenizers[spec]
    encoder = TermEncoder(tok, 0xFFFE)
    ids = encoder.encode("Paris")
    assert tok.convert_ids_to_tokens(list(ids)) == [f"{boundary}Paris"]
    # The same ids appear inside running text, so the index can find them.
    running = encode_texts(tok, ["The capital is Paris today."])[0]
    assert any(running[i:i + len(ids)] == list(ids) for i in range(len(running)))


@pytest.mark.parametrize("spec", ["smollm2-135m", "tiny-llama"])
def test_words_match_running_text(tokenizers, spec):
    tok, _ = tokenizers[spec]
    encoder = TermEncoder(tok, 0xFFFE)
    for word in ["Kubrick", "Zürich", "O'Brien", "U.S.", "naïve", "1968", "New York"]:
        ids = encoder.encode(word)
        running = encode_texts(tok, [f"It was said that {word} was there."])[0]
        assert ids and any(running[i:i + len(ids)] == list(ids) for i in range(len(running))), word


@pytest.mark.parametrize("spec", ["smollm2-135m", "tiny-llama"])
def test_lone_boundary_token_is_dropped(tokenizers, spec):
    """Digits have no word-initial token: the reference drops the lone boundary token."""
    tok, _ = tokenizers[spec]
    ids = TermEncoder(tok, 0xFFFE).encode("1968")
    assert tok.decode(list(ids)).strip() == "1968"
    assert tok.decode([ids[0]]).strip() != ""


@pytest.mark.parametrize("spec", ["smollm2-135m", "tiny-llama"])
def test_special_and_unstorable_ids_never_match(tokenizers, spec):
    tok, _ = tokenizers[spec]
    encoder = TermEncoder(tok, 0xFFFE)
    assert encoder.encode("Paris") is not None
    # special-token strings are text, not special ids
    ids = encoder.encode(tok.eos_token)
    assert ids is None or not set(ids) & set(tok.all_special_ids)
    # an index that can only store small ids: the word cannot occur there -> None (count 0)
    assert TermEncoder(tok, 10).encode("Paris") is None


def test_unknown_token_is_none_not_unk():
    """A tokenizer without byte fallback maps unknown words to UNK: that must count zero."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel({"[UNK]": 0, "x": 1, "Paris": 2}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]")
    encoder = TermEncoder(tok, 0xFFFE)
    assert encoder.encode("Paris") == (2,)
    assert encoder.encode("Zzyzx") is None


def test_fingerprints_differ_and_dtype_follows_vocabulary(tokenizers):
    (_, a), (_, b) = tokenizers["smollm2-135m"], tokenizers["tiny-llama"]
    assert a.fingerprint != b.fingerprint and len(a.fingerprint) == 64
    assert (a.vocab_size, b.vocab_size) == (49152, 32000)
    assert token_dtype_for(49152) == "u16" and token_dtype_for(65535) == "u16"
    assert token_dtype_for(65536) == "u32" and token_dtype_for(128256) == "u32"

"""Builders for the FActScore-NPM tests: a tiny masked LM with a byte-level BPE tokenizer whose
special ids are *not* RoBERTa's (`<pad>` 0, `<unk>` 1, `<mask>` 2, `<s>` 3, `</s>` 4, and ":"
wherever training puts it), so an id hard-coded from RoBERTa (0 / 2 / 35) gives wrong answers;
and a small Wikipedia-like evidence store with FTS-operator titles."""
from __future__ import annotations

import json
from pathlib import Path

TEXT = ("Fact: Paris is the capital of France. The river Seine flows through Paris. "
        "Berlin is the capital of Germany. Marie Curie won the Nobel Prize in Physics. "
        "Jean-Paul Sartre declined the Nobel Prize in Literature. The NEAR probe studied Eros. ")

ARTICLES = [
    {"title": "Paris", "text": "Paris is the capital and largest city of France. The river Seine flows through "
                               "the city. Paris hosts the Louvre museum. Paris has a population of about two "
                               "million people. It is known as the City of Light. The Paris Metro opened in 1900."},
    {"title": "Berlin", "text": "Berlin is the capital of Germany. The river Spree flows through Berlin."},
    {"title": "Jean-Paul Sartre", "text": "Jean-Paul Sartre was a French philosopher. He declined the Nobel Prize "
                                          "in Literature in 1964."},
    {"title": "NEAR Shoemaker", "text": "NEAR Shoemaker was a robotic space probe that studied the asteroid Eros."},
    {"title": "Logical conjunction", "text": "In logic, AND is conjunction; OR is disjunction and NOT is negation."},
    {"title": "Marie Curie", "text": "Marie Curie was a physicist and chemist. She won the Nobel Prize in Physics "
                                     "in 1903 and in Chemistry in 1911."},
]


def build_tiny_mlm(out: Path, seed: int = 0) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    specials = ["<pad>", "<unk>", "<mask>", "<s>", "</s>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([TEXT] * 3, vocab_size=400, min_frequency=2, special_tokens=specials,
                            show_progress=False)
    bpe.post_processor = processors.RobertaProcessing(("</s>", bpe.token_to_id("</s>")),
                                                      ("<s>", bpe.token_to_id("<s>")))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", pad_token="<pad>", mask_token="<mask>", cls_token="<s>",
                                  sep_token="</s>")
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    config = RobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=258, pad_token_id=0, bos_token_id=3,
                           eos_token_id=4)
    torch.manual_seed(seed)
    model = RobertaForMaskedLM(config)
    with torch.no_grad():  # larger hidden states spread the similarity weights apart
        model.roberta.embeddings.word_embeddings.weight.mul_(20)
    model.save_pretrained(out)
    return out


def build_store(tmp: Path) -> Path:
    from factrl.harness.services.evidence import build_store as build

    source = tmp / "wiki.jsonl"
    source.write_text("".join(json.dumps(a) + "\n" for a in ARTICLES), encoding="utf-8")
    out = tmp / "wiki.sqlite3"
    build(source, out, tokenizer="words", passage_tokens=12, force=False)
    return out

"""Tiny randomly initialised NLI models with the real models' interfaces, saved to disk.

No package ships HHEM, flan-t5 or DeBERTa weights, so the tests build models of the same
classes (docs/BASELINES.md §2.1, 5.1) and load them through the scorers' real loading paths:
- HHEM: a T5 foundation directory (T5Config d_model 16, one layer, num_labels 2, and a
  WordLevel tokenizer with `<pad>` = 0, `</s>` = 1 appended like T5's) and an HHEM checkpoint
  saved by our HHEM-shaped classes with register_for_auto_class, so it carries its code
  (config.json auto_map + hhem_model.py) exactly as vectara's checkpoint does;
- DeBERTa: a DebertaV2ForSequenceClassification with a WordLevel BERT-style pair tokenizer
  and the id2label the test asks for (entailment at 0, at 2, or absent).
"""
from __future__ import annotations

import json
from pathlib import Path

WORDS = ("determine if the hypothesis is true given premise ? : . , paris capital of france city "
         "berlin germany river seine flows through 1889 1900 eiffel tower built in not was a and "
         "population large small europe country").split()


def _word_level(specials: list[str], single: str, pair: str | None, unk: str):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {token: i for i, token in enumerate(specials + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    ids = [(token, vocab[token]) for token in specials]
    tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=ids)
    return tok, len(vocab)


def build_t5_foundation(out: Path) -> Path:
    """A flan-t5-base stand-in directory: T5 config + tokenizer (no weights; HHEM brings them)."""
    from transformers import PreTrainedTokenizerFast, T5Config

    tok, size = _word_level(["<pad>", "</s>", "<unk>"], "$A </s>", None, "<unk>")
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(out)
    T5Config(vocab_size=size, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, num_labels=2,
             pad_token_id=0, eos_token_id=1, decoder_start_token_id=0).save_pretrained(out)
    return out


def build_hhem(out: Path, foundation: Path, seed: int = 0, recorded_foundation: str | None = None) -> Path:
    """An HHEM-2.1-shaped checkpoint (weights + config.json + remote code) built on `foundation`.

    `recorded_foundation` replaces the `foundation` field written to config.json (the real
    checkpoint says google/flan-t5-base, reachable offline only through nli.foundation).
    """
    import torch

    from factrl.harness.services.nli.hhem_model import HHEMv2Config, HHEMv2ForSequenceClassification

    torch.manual_seed(seed)
    HHEMv2Config.register_for_auto_class()
    HHEMv2ForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
    model = HHEMv2ForSequenceClassification(HHEMv2Config(foundation=str(foundation)))
    with torch.no_grad():  # a visible spread of scores: random init gives ~0.5 everywhere
        model.t5.classifier.weight.mul_(20)
    model.save_pretrained(out)
    if recorded_foundation is not None:
        path = out / "config.json"
        config = json.loads(path.read_text())
        config["foundation"] = recorded_foundation
        path.write_text(json.dumps(config, indent=2))
    return out


def build_deberta(out: Path, id2label: dict[int, str], seed: int = 0) -> Path:
    """A tiny DeBERTa-v2 NLI classifier with the given id2label (weights depend only on seed)."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, PreTrainedTokenizerFast

    tok, size = _word_level(["[PAD]", "[CLS]", "[SEP]", "[UNK]"], "[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1",
                            "[UNK]")
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
                            unk_token="[UNK]").save_pretrained(out)
    config = DebertaV2Config(vocab_size=size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=512, relative_attention=True,
                             position_buckets=32, pos_att_type=["p2c", "c2p"], position_biased_input=False,
                             type_vocab_size=0, pad_token_id=0, num_labels=len(id2label), initializer_range=0.5,
                             id2label=dict(id2label), label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(seed)
    model = DebertaV2ForSequenceClassification(config)
    with torch.no_grad():  # spread the scores apart (random init gives nearly uniform classes)
        model.pooler.dense.weight.mul_(5)
        model.classifier.weight.mul_(20)
    model.save_pretrained(out)
    return out

"""HHEM-2.1-Open's model classes, rewritten for transformers 5.x (docs/BASELINES.md §2.1).

Vectara's remote code (`modeling_hhem_v2.py`) was written for transformers 4.x and its config
`__init__` is misspelt (three underscores), so its fields only arrive through generic kwargs.
These classes keep the checkpoint layout exactly (`t5.transformer.*`, `t5.classifier.*`, the
`foundation` and `prompt` fields of config.json) so HHEM's own weights load into them, and
differ only where 5.x or offline use needs it: a working config `__init__`, the foundation's
T5 config can be passed in (no hub call), and weights are tied the 5.x way.

This file imports only torch and transformers: `save_pretrained` copies it beside a checkpoint
as remote code (the tests' path), so it must work outside the `factrl` package.
"""
from __future__ import annotations

from transformers import AutoConfig, PretrainedConfig, PreTrainedModel, T5ForTokenClassification

HHEM_PROMPT = ("<pad> Determine if the hypothesis is true given the premise?\n\n"
               "Premise: {text1}\n\nHypothesis: {text2}")


class HHEMv2Config(PretrainedConfig):
    """config.json of HHEM-2.1-Open: `foundation` (where the T5 config and tokenizer live) and
    `prompt` (the template with `{text1}` = premise, `{text2}` = hypothesis)."""

    model_type = "HHEMv2"

    def __init__(self, foundation: str = "google/flan-t5-base", prompt: str = HHEM_PROMPT, **kwargs):
        super().__init__(**kwargs)
        self.foundation = foundation
        self.prompt = prompt


class HHEMv2ForSequenceClassification(PreTrainedModel):
    """T5 encoder + token classifier read at position 0 (the prompt's leading `<pad>`).

    forward(input_ids (B, T), attention_mask (B, T)) -> output whose `logits` are (B, 2), the
    position-0 logits; class 1 = the premise supports the hypothesis.
    """

    config_class = HHEMv2Config
    base_model_prefix = "hhem"  # not "t5": the checkpoint keys start with "t5." and must stay

    def __init__(self, config: HHEMv2Config, foundation_config: PretrainedConfig | None = None):
        super().__init__(config)
        t5_config = foundation_config or AutoConfig.from_pretrained(config.foundation)
        self.t5 = T5ForTokenClassification(t5_config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        outputs = self.t5(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        outputs.logits = outputs.logits[:, 0, :]
        return outputs

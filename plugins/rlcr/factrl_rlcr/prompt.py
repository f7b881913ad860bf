"""RLCR's prompt addition: the part of the release's system prompt that the shared prompt lacks.

The release trains with the system prompt TABC_LONG (damanimehul/RLCR@8904bed,
system_prompts.py:16-29, chosen by configs/Qwen-7B/hotpot/RLCR.yaml:50 `sys_prompt_name:
"tabc_long"` and placed as the system message, dataset_processing.py:26). The shared harness
prompt already asks for a think block and an answer block, so the addition holds only what asks
for the analysis and the confidence, verbatim, in the release's order:

- system_prompts.py:19, first sentence: what the confidence is and where it goes;
- system_prompts.py:20, first sentence: where the analysis goes;
- system_prompts.py:29: the full format the reward's `tabc` pattern checks.

Left out (README, Fidelity, "policy prompt"): the conversation framing of :17-18 and the answer
sentence of :19 (the shared prompt says both in its own words), the sentence of :20 asking the
assistant to reason about its confidence inside the tags and the seven analysis guidelines of
:21-28, which would push the embedded SmolLM2-135M's longest demo-pool prompt past its
`train.max_prompt_length` of 256 tokens (238 with this addition).
"""
from __future__ import annotations

PROMPT_ADDITION = (
    "The confidence level is a number between 0 and 1 (inclusive) enclosed within <confidence> </confidence> tags. "
    "The analysis about confidence and uncertainty is enclosed within <analysis> </analysis> tags. "
    "The final format that must be followed is : <think> reasoning process here </think><answer> final answer here "
    "</answer> <analysis> analysis about confidence and uncertainty here</analysis> <confidence> confidence level "
    "here (number between 0 and 1) </confidence>"
)

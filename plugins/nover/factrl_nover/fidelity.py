"""NOVER's deliberate differences from the released code (thinkwee/NOVER @cb1a4ef), for the run's
components: `settings.differences` lists each as {"setting", "original", "ours"}, so a table can
mark it. README.md's "Fidelity" table explains them; tests/test_nover_reference_vectors.py pins
what is the same.
"""
from __future__ import annotations

from typing import Any

RELEASE = "thinkwee/NOVER@cb1a4ef"
RELEASED_SAVE_STEPS = 100  # config.py:55

ALWAYS = (
    {"setting": "policy_prompt", "original": "the plain TRAIN_PROMPT string, no chat template (data_loader.py:127)",
     "ours": "the harness prompt (system prompt, chat template) shared by every method"},
    {"setting": "group_rows", "original": "prompts[0] / reference[0] for the whole reward call "
                                          "(reward_functions.py:114-115)",
     "ours": "each group scored against its own row"},
    {"setting": "format_gate", "original": "whitespace-free completion == <think>first</think><answer>first</answer> "
                                           "(reward_functions.py:17-43)",
     "ours": "each tag exactly once, one think block then one answer block"},
    {"setting": "perplexity_batching", "original": "one forward per completion (reward_functions.py:152)",
     "ours": "one left-padded forward per step over the distinct (context, target) pairs (identical "
             "completions share it), position ids from the first real token"},
    {"setting": "lm_head", "original": "LoRA modules_to_save=[lm_head], mixed into the proxy (config.py:96-104)",
     "ours": "the shared LoRA (lora.*), no modules_to_save"},
)


def differences(settings: Any, reward: Any) -> list[dict[str, str]]:
    """The differences of a run with these settings (and the reward's proxy cadence)."""
    out = [dict(d) for d in ALWAYS]
    if settings.length_rule != "released":
        out.append({"setting": "length_rule", "original": "max(1, 1 + log10 N_r) (utils.py:102)",
                    "ours": f"{settings.length_rule} (natural log)"})
    if settings.rank_ties != "released":
        out.append({"setting": "rank_ties", "original": "stable sort: tied P get distinct ranks "
                                                        "(reward_functions.py:312-322)",
                    "ours": "ties share the better rank"})
    if not settings.proxy:
        out.append({"setting": "proxy", "original": "a proxy copy of the policy (trainer.py:95-99)",
                    "ours": "the trained adapter scores itself"})
    if settings.kl_reference != "proxy":
        out.append({"setting": "kl_reference", "original": "the proxy (trainer.py:95-99,250-255)",
                    "ours": "the adapter-disabled base model"})
    if getattr(settings, "answer_gate", "none") != "none":
        out.append({"setting": "answer_gate", "original": "the answer block is never read: only the reasoning's "
                                                          "perplexity of the reference (reward_functions.py)",
                    "ours": "match (a guard): an answer missing the gold under the protocol's matcher earns "
                            "the format term only"})
    save_steps = getattr(reward, "save_steps", None)
    if settings.proxy and save_steps is not None and int(save_steps) != RELEASED_SAVE_STEPS:
        out.append({"setting": "proxy_cadence", "original": f"mixed at each save, every {RELEASED_SAVE_STEPS} steps "
                                                            f"(config.py:55,70-71)",
                    "ours": f"every train.save_steps = {save_steps} steps"})
    return out


__all__ = ["ALWAYS", "RELEASE", "RELEASED_SAVE_STEPS", "differences"]

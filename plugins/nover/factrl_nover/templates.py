"""The texts NOVER's released reward scores the proxy perplexity on, verbatim (thinkwee/NOVER
@cb1a4ef9361c4a68cfcc695d65ea69f524931c90; a released prompt is a fact of the method, do not edit).

`utils.calculate_perplexity` (utils.py:49-67, tagged format, tags think/answer from config.py:25-26)
tokenises context + target as one plain string, no chat template, and scores the target's tokens:
    context = PPL_CONTEXT.format(question=...) [+ PPL_REASONING_SUFFIX.format(reasoning=...) if any]
    target  = PPL_TARGET.format(target=reference answer)
The question it receives is the policy prompt cut at "Answer the question and return in the
following format" (reward_functions.py:114-116). The policy prompt is TRAIN_PROMPT
(data_loader.py:127), so that cut is "Question: {q}\\n\\n" and the context reads
"\\nQuestion: Question: {q}\\n\\n\\n\\nAnswer ...": the release repeats "Question:", and so do we.
"""
from __future__ import annotations

SOURCE = "thinkwee/NOVER@cb1a4ef"

# data_loader.py:127: the released policy prompt ({prompt} = the question).
TRAIN_PROMPT = ("Question: {prompt}\n\nAnswer the question and return in the following format:\n\n"
                "<think>\n...\n</think>\n\n<answer>\n...\n</answer>\n")
# reward_functions.py:116: where the question part of the policy prompt ends.
QUESTION_END = "Answer the question and return in the following format"
# utils.py:49-61, :63, :65.
PPL_CONTEXT = ("\nQuestion: {question}\n\nAnswer the question and return in the following format:\n\n"
               "<think>\n...\n</think>\n\n<answer>\n...\n</answer>\n")
PPL_REASONING_SUFFIX = "\n<think>\n{reasoning}\n</think>\n"
PPL_TARGET = "\n<answer>\n{target}\n</answer>"


def ppl_question(question: str) -> str:
    """The question string the released reward passes to the perplexity: "Question: {q}\\n\\n"."""
    prompt = TRAIN_PROMPT.format(prompt=question)
    return prompt.split(QUESTION_END)[0] if QUESTION_END in prompt else prompt


def ppl_texts(question: str, reasoning: str, target: str) -> tuple[str, str]:
    """(context, target) strings of `calculate_perplexity` for a row's question, a completion's
    reasoning (its first think block, stripped) and the reference answer."""
    context = PPL_CONTEXT.format(question=ppl_question(question))
    if reasoning:
        context += PPL_REASONING_SUFFIX.format(reasoning=reasoning)
    return context, PPL_TARGET.format(target=target)


__all__ = ["PPL_CONTEXT", "PPL_REASONING_SUFFIX", "PPL_TARGET", "QUESTION_END", "SOURCE", "TRAIN_PROMPT",
           "ppl_question", "ppl_texts"]

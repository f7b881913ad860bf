"""RLFH's three judge prompts, verbatim: the values of EXTRACT_PROMPT, VERIFY_PROMPT and
ASSESS_PROMPT in AlignRM/RLFH@78cd846 source/feedback/annotate.py (lines below). A released
prompt is a fact of the method, kept word for word (VERIFY's example holds an en dash and a stray
quote after "copies.", and two spaces after "Vague":, as released). prompts.py fills them; the
fidelity table in README.md lists what the filling adds (material blocks, the material rule).

Never edit these strings: tests/rlfh/test_prompts.py checks their sha256 against the released
constants'.
"""
from __future__ import annotations

SOURCE = "AlignRM/RLFH@78cd846 source/feedback/annotate.py"

# annotate.py:19-49
EXTRACT_PROMPT = """- Find every sentence containing object facts.
- Break sentences into atomic statements.
- Skip the sentences without statements.
- If there is no valid sentence, output "No statements".
- Do not output any explanation or other words.
- Strictly follow the output format shown in the example.

Here is an example:
# Response
It is difficult to say which game has been released in more versions without more information, so I can only guess based on my training data.
Arthur's Magazine was likely started first. It was possibly founded in 1923 by Arthur K. Watson, a prominent publisher in the field of men's magazines.
First for Women, on the other hand, was not founded until 1989. It was created as a spin-off of Family Circle magazine, which was founded in 1957.

# Statements
>> Sentence 1: Arthur's Magazine was likely started first.
* Arthur's Magazine was likely started first.
>> Sentence 2: It was possibly founded in 1923 by Arthur K. Watson, a prominent publisher in the field of men's magazines.
* Arthur's Magazine was possibly founded in 1923.
* Arthur's Magazine was founded by Arthur K. Watson.
* Arthur K. Watson is a prominent publisher in the field of men's magazines.
>> Sentence 3: First for Women, on the other hand, was not founded until 1989.
* First for Women was not founded until 1989.
>> Sentence 4: It was created as a spin-off of Family Circle magazine, which was founded in 1957.
* First for Women was created as a spin-off of Family Circle magazine.
* Family Circle magazine was founded in 1957.

And then comes your task:
# Response
{response}

# Statements"""

# annotate.py:50-71
VERIFY_PROMPT = """Choose from "Correct", "Vague" and "Wrong" for the verification of the statement.
- "Correct": The statement is supported by the materials.
- "Vague":  Hard to determine the truthfulness of the statement based on the materials.
- "Wrong": The statement is negated by the materials.
Directly output the verification result without explanation.

Here is an example:
# Materials
- First for Women is a women's magazine published by Bauer Media Group in the USA. The magazine was started in 1989. It is based in Englewood Cliffs, New Jersey. In 2011 the circulation of the magazine was 1,310,696 copies."
- Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia in the 19th century. Edited by T.S. Arthur, it featured work by Edgar A. Poe, J.H. Ingraham, Sarah Josepha Hale, Thomas G. Spear, and others. In May 1846 it was merged into "Godey's Lady's Book".
- The correct answer for the question "Which magazine was started first Arthur's Magazine or First for Women" may be "Arthur's Magazine".
# Statement
Arthur's Magazine was likely started first.
# Verification
Correct

And then comes your question:
# Materials
{materials}
# Statement
{statement}
# Verification"""

# annotate.py:72-99
ASSESS_PROMPT = """Evaluate the helpfulness of the statement:
- "5": The statement answer the question.
- "4": The statement provides crucial information.
- "3": The statement contains relevant facts.
- "2": The statement is about other supplementary facts.
- "1": The statement is useless or not relevant at all.
Directly output the evaluation result without explanation.

Here is an example:
# Question
Which magazine was started first Arthur's Magazine founded by Arthur K. Watson or First for Women?
# Response
It is difficult to say which game has been released in more versions without more information, so I can only guess based on my training data.
Arthur's Magazine was likely started first. It was possibly founded in 1923 by Arthur K. Watson, a prominent publisher in the field of men's magazines.
First for Women, on the other hand, was not founded until 1989. It was created as a spin-off of Family Circle magazine, which was founded in 1957.
# Statement
Arthur's Magazine was possibly founded in 1923.
# Evaluation
4

And then comes your task:
# Question
{question}
# Response
{response}
# Statement
{statement}
# Evaluation"""

__all__ = ["ASSESS_PROMPT", "EXTRACT_PROMPT", "SOURCE", "VERIFY_PROMPT"]

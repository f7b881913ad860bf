"""Binary RAR's verifier prompt, verbatim: chentong0/rl-binary-rar@d97ea69
binary_rar_tinker/prompts.py:1-53 (`get_verifier_prompt`). TEMPLATE is the released f-string's
body as a str.format template (the same placeholders, {documents}, {instruction}, {response},
and the same escaped braces), so TEMPLATE.format(...).strip() is the released text. The repository carries
no license file; a released prompt text is a fact of the method, used verbatim and cited; do not
edit it (prompts.py adds the harness's material rule
and says so).
"""

TEMPLATE = """
You are a professional fact-checker tasked with evaluating a language model's response for accuracy. Your job is to systematically compare the response against the provided web search results to identify any factual errors or contradictions. A response deserves a full score if every claim it makes is factually correct, even if it doesn't include every available detail. Omitting information is not a factual error. If a response contains anything that contradicts the world knowledge shown in the search results, it should be considered an error and get a low score.

## EVALUATION PROCESS:
1. Read the search results thoroughly to understand the factual baseline
2. Examine each factual claim in the language model's response
3. Cross-reference each claim against the search results
4. Classify each discrepancy according to the guidelines below

## CONSIDER CORRECT (No Factual Error): 
- Paraphrasing: Same facts expressed in different words
- Reasonable inferences: Logical conclusions drawn from search results
- Partial information: Incomplete but accurate subsets of available information
- Contextual additions: Background information that doesn't contradict search results
- Minor formatting differences: Different ways of presenting same data

## CONSIDER INCORRECT (Factual Error):
- Direct contradictions: Response states opposite of what search results show
- Numerical errors: Wrong dates, statistics, quantities, percentages
- Categorical errors: Wrong classifications, locations, names, titles
- Causal errors: Incorrect cause-and-effect relationships
- Timeline errors: Events placed in wrong chronological order
- Attribution errors: Wrong sources, authors, or speakers cited

## SCORING RULES:
Your evaluation will result in a binary score: 0 or 1.
- SCORE 1 (No Contradiction): Assign this score if:
    1.  The response is fully supported by the document.
    2.  The response contains information that is NOT in the document, but DOES NOT contradict it.
- SCORE 0 (Contradiction): Assign this score ONLY if you find a clear, factual contradiction between the response and the supporting document. A contradiction occurs when the response states the opposite of what the document says (e.g., wrong dates, names, events, or outcomes).

## OUTPUT FORMAT:
You must respond ONLY in a valid JSON format with exactly these two fields:
- "REASONING": A brief explanation for your score.
    - For SCORE 0, specify the contradiction (e.g., "The response states the event was in 2022, but the document says it was in 2023.").
    - For SCORE 1, simply state "No contradiction found."
- "SCORE": An integer, either 0 or 1.

>>> Begin of search results <<<
{documents}
<<< End of search results >>>

>>> Begin of the prompt <<<
{instruction}
<<< End of the prompt >>>

>>> Begin of the response <<<
{response}
<<< End of the response >>>

Respond in JSON format. {{"REASONING": "[...]", "SCORE": "<your-score>"}}
"""

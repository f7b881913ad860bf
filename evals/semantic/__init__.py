"""LLM-judge checks beyond string matching (docs/PROTOCOL.md §6): semantic correctness, TruthfulQA
truthful / informative, and SimpleQA's own grader. Prompts in prompts.py (semantic checks) and
grader.py (SimpleQA, with simple-evals' template in grader_template.py), the checks in
checks.py, SimpleQA's AGA / F arithmetic in simpleqa.py. Fidelity: evals/semantic/README.md."""
from .checks import semantic_correctness, simpleqa_grades, truthfulqa_checks
from .grader import (SIMPLEQA_GRADER, SIMPLEQA_GRADER_STRICT, SIMPLEQA_SHORT_FIRST_LETTER, SIMPLEQA_SHORT_STRICT,
                     grader_prompt)
from .prompts import INFORMATIVE, SEMANTIC_GRADE, TRUTHFUL, parse_first_letter
from .simpleqa import simpleqa_metrics

__all__ = ["INFORMATIVE", "SEMANTIC_GRADE", "SIMPLEQA_GRADER", "SIMPLEQA_GRADER_STRICT",
           "SIMPLEQA_SHORT_FIRST_LETTER", "SIMPLEQA_SHORT_STRICT", "TRUTHFUL", "grader_prompt", "parse_first_letter",
           "semantic_correctness", "simpleqa_grades", "simpleqa_metrics", "truthfulqa_checks"]

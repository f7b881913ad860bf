"""LLM-judge checks beyond string matching (PROTOCOL 6): semantic correctness, TruthfulQA
truthful / informative, and SimpleQA's own grader. Prompts in prompts.py, the checks in
checks.py, SimpleQA's AGA / F arithmetic in simpleqa.py."""
from .checks import semantic_correctness, simpleqa_grades, truthfulqa_checks
from .prompts import INFORMATIVE, SEMANTIC_GRADE, SIMPLEQA_FIRST_LETTER, TRUTHFUL, parse_first_letter
from .simpleqa import simpleqa_metrics

__all__ = ["INFORMATIVE", "SEMANTIC_GRADE", "SIMPLEQA_FIRST_LETTER", "TRUTHFUL", "parse_first_letter",
           "semantic_correctness", "simpleqa_grades", "simpleqa_metrics", "truthfulqa_checks"]

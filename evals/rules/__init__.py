"""Per-task decision rules the scorers apply to an extracted answer (docs/PROTOCOL.md §6).

`truthfulqa`: the ROUGE-1 decision with the harness's guards; `multihop`: the official
HotpotQA/2Wiki EM and F1. The closed-book rule is `factrl.harness.core.answers.match_prepared`,
because training uses it too.
"""

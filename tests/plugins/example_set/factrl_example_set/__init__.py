"""The registry entries of the example set: data only, so listing them imports nothing heavy.

`harness sets` reads SET and TASK; the loader (data.py) and the rule (rule.py) are imported only
when the set is evaluated.
"""
from factrl.harness.core.registry import EvalSetInfo, TaskInfo

SET = EvalSetInfo(
    name="capitals_yesno",          # the entry point's name: eval.sets=[capitals_yesno]
    label="Capitals (yes/no)",      # the table header
    task="yes_no",                  # the task below
    loader="factrl_example_set.data:SPEC",
    order=80,                       # after the paper's sets (10..70), before the demo set (100)
    macro=False,                    # not one of the paper's Macro sets
)

TASK = TaskInfo(
    name="yes_no",
    table="accuracy",               # a column of the accuracy table (primary metric: accuracy)
    metrics=("accuracy", "na_rate"),
    rule="factrl_example_set.rule:RULE",
)

"""`harness run`: the command line (the run itself: harness/engine/run/orchestrate.py).

`--help` prints the run's usage and its main keys without importing torch; everything else
goes through Hydra (config.hydra_entry), so `-m` sweeps and `--cfg job` work as usual.
"""
from __future__ import annotations

import sys

from ..config import hydra_entry
from .orchestrate import __doc__ as run_doc
from .orchestrate import run_task
from .signals import raise_on_sigterm

HELP_KEYS = """
Groups (group=option; `harness run --cfg job` prints the composed config):
  method=corver|fspo|knowrl|rlfh|forag|raw|<plugin>   the reward method (`harness methods` lists them)
  model=smollm2-135m|tiny-llama|llama-3.2-3b|...|org/name|/local/dir
  judge=embedded|openai|none     the LLM judge of judge-based methods (judge.base_url=, judge.model=)
  evidence=demo|file             the evidence store (evidence.store=STORE.sqlite3)
  eval=demo|closed-book|truthfulqa|multihop   corpus=demo|wikipedia|remote|none   pool=demo|file
  experiment=corver-a1|...       ablations and variants (configs/experiment/)
  launcher=none|torchrun|accelerate   leaderboard=default|rundir   lora=default   timer=default

Main keys (key=value):
  train.steps=100                 optimizer steps (PPO methods: rollouts)
  train.questions_per_step=3      Q questions per step
  train.completions_per_question=16   C completions per question (the GRPO group)
  train.learning_rate=1e-5  train.beta=0.001  train.max_completion_length=1000  train.save_steps=25
  eval.limit=100                  score only the first N questions of each set (null: all)
  eval.backend=hf|vllm|openai     eval.max_new_tokens=...
  output_dir=runs                 where run directories go
  leaderboard.store=PATH          the leaderboard SQLite file (leaderboard.enabled=false: record nothing)
  seed=42  force=true (rerun a finished run)  resume=true
  method.<key>=...                the method's options (configs/method/<name>.yaml documents each)

A mistyped key or option, or a value of the wrong type, stops the run in a second with one line.
`harness run --help KEY` (e.g. claim.stale_s, train.ppo.gamma, method.threshold method=fspo) prints
one key's type, allowed range, default and help."""


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        if len(argv) > 1 and "=" not in argv[1]:  # `--help claim.stale_s [method=fspo]`: one key
            from .settings_help import describe

            method = next((a.split("=", 1)[1] for a in argv[2:] if a.startswith("method=")), None)
            print(describe(argv[1], method))
            return 0
        print(run_doc.strip())
        print(HELP_KEYS)
        return 0
    # A time limit's SIGTERM marks the run interrupted (resumable), not `running`. Under a launcher
    # (run_task re-executes the job in N processes) every process gets its own SIGTERM from Slurm.
    raise_on_sigterm()
    try:
        return hydra_entry(run_task, argv, "harness run")
    finally:
        distributed = sys.modules.get("factrl.harness.training.distributed")
        if distributed is not None:  # imported once a run started
            distributed.shutdown()  # under torchrun / accelerate: before exit, so no process aborts

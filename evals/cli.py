"""`harness eval` (generate and score, Hydra overrides) and `harness score` (score files again)."""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from factrl.harness.core.errors import DataError, HarnessError

log = logging.getLogger("factrl.evals")

SCORE_HELP = """\
Score predictions without regenerating them.

PREDICTIONS is a JSONL file with one object per line holding `id` and `completion` (the
model's full output; `question`, when present, must match the set's), such as an
evaluation's eval/<set>/generations.jsonl; or a folder holding generations.jsonl; or a
folder of such set folders (a run's eval/), which scores every set and writes the
run-level summary with the closed-book macro.

The set is --set, else the name of the folder the file is in, else the set named by a
metrics.json beside the file. Its data: --data FILE, else the local file (and 2Wiki alias
file) named by that metrics.json, else a file in --data-dir, else the hub (the demo set is
embedded). The question limit: --limit, else the one recorded in that metrics.json.
Predictions must cover exactly the set's questions (after the limit).

Results go to --out (default: beside the predictions; for a non-default scorer, a
`scorer-<name>/` folder there, so the default results are not overwritten):
<set>/samples.jsonl and <set>/metrics.json.

examples:
  harness score runs/<run>/eval/nq_open/generations.jsonl
  harness score preds.jsonl --set nq_open --data /data/benchmarks/nq_open_validation.json
  harness score runs/<run>/eval --scorer corver-official
"""


EVAL_HELP = """\
usage: harness eval [KEY=VALUE ...]

Generate answers with a model (and optional LoRA adapter) for the evaluation sets of an eval
option, score them (docs/PROTOCOL.md §6) and write one run directory: <output_dir>/<date>-eval-<model>-<hash>/
with config.yaml, run.json, run.log, eval/<set>/{{generations,samples}}.jsonl, metrics.json.
Rerunning the same command resumes: finished answers are kept and only the missing ones asked for.

main options (Hydra overrides):
  model=NAME | ORG/NAME | DIR   a model preset, a hub id or a local directory; presets:
                                {models}
  adapter=DIR                   a PEFT LoRA adapter evaluated on top of the model (e.g. <run>/train/adapter)
  eval=OPTION                   which sets ({evals}); or eval.sets=[nq_open,popqa]
  eval.backend=hf|vllm|openai   transformers (default, CPU or GPU) | vLLM offline (GPU) | an OpenAI-compatible
                                server: eval.openai.base_url=http://127.0.0.1:8000/v1 [eval.openai.model=NAME]
  eval.limit=N                  only the first N questions of each set (default: all)
  eval.processes=N              generate in N processes, one GPU each (data parallel), merged before scoring
  eval.scorer=default|corver-official   docs/PROTOCOL.md §6's scorer, or the released CorVer script's
  eval.max_new_tokens=N         shorter answers than the preset's 1,000 (quick CPU runs)
  eval.data_dir=DIR             local copies of the sets (eval.data.<set>=FILE for one set)
  output_dir=DIR                where run directories go (default: runs)
  eval.factscore=true           FActScore-NPM on the reasoning of eval.factscore_options.sets (default hotpotqa)
  eval.semantic=true            the judge grades semantic correctness (and TruthfulQA truthful / informative)
  eval.simpleqa_grader=true     SimpleQA's own A/B/C grader with accuracy given attempted and F
                                (these three use judge=... and evidence=...; see evals/README.md)

examples:
  harness eval model=smollm2-135m eval=demo eval.limit=32
  harness eval model=qwen3-4b adapter=runs/<run>/train/adapter eval=closed-book eval.backend=vllm
  harness eval model=llama-3.1-8b eval=truthfulqa eval.backend=openai eval.openai.base_url=http://127.0.0.1:8000/v1

Every key: `harness eval --cfg job` prints the composed config; configs/eval/base.yaml documents
each eval.* field. `harness score` rescores saved answers without generating.
"""


def eval_help() -> str:
    from factrl.harness.engine.config import group_options

    return EVAL_HELP.format(models=", ".join(o for o in group_options("model") if o != "custom"),
                            evals=", ".join(o for o in group_options("eval") if o != "base"))


def eval_main(argv: list[str]) -> int:
    """`harness eval model=... [adapter=DIR] eval=...`: Hydra overrides, one run directory."""
    from factrl.harness.engine.config import hydra_entry

    if any(a in ("-h", "--help") for a in argv):  # Hydra's --help is a 200-line config dump; --cfg job stays
        print(eval_help())
        return 0
    return hydra_entry(_eval_task, list(argv), "harness eval")


def _eval_task(cfg) -> dict:
    from factrl.harness.engine.run.eval_process import evaluate_in_fresh_process, processes_of
    from factrl.harness.services.models.disk import for_disk_loaders
    from factrl.harness.services.models import resolve
    from factrl.harness.core.rundir import attach_log, detach_log, open_run, write_json

    from .runner import evaluate

    started = time.monotonic()
    identity = for_disk_loaders(resolve(cfg.model), cfg)  # a random model for vLLM: saved to disk first
    run = open_run(cfg, kind="eval")
    handler = attach_log(run)
    try:
        if processes_of(cfg) > 1:  # data-parallel generation: eval.processes processes, one GPU each
            result = evaluate_in_fresh_process(cfg, identity=identity, adapter=cfg.get("adapter"), out_dir=run / "eval",
                                               log_file=run / "run.log")
        else:
            result = evaluate(cfg, identity=identity, adapter=cfg.get("adapter"), out_dir=run / "eval")
        write_json(run / "metrics.json", result)
        run.finish()
    except BaseException:
        run.update(status="failed")
        raise
    finally:
        detach_log(handler)
    print(summary_table(result))
    print(f"wrote {run.path} ({time.monotonic() - started:.1f} s)")
    return result


def summary_table(result: dict) -> str:
    from .calibration import calibration_line
    from .strict import strict_line

    lines = []
    for name, doc in result["sets"].items():
        values = "  ".join(f"{k} {v['value']:.4f}" for k, v in doc["metrics"].items())
        extra = [text for text in (strict_line(doc.get("strict_accuracy")), calibration_line(doc.get("calibration")))
                 if text]
        lines.append(f"{name:<11} n={doc['set']['count']:<6} {values}" + "".join(f"  {t}" for t in extra))
    macro = result.get("macro", {}).get("closed_book_accuracy")
    if macro:
        lines.append(f"macro closed-book accuracy {macro['value']:.4f} over {macro['n_sets']} set(s)"
                     + ("" if macro["complete"] else " (incomplete: not comparable with 5-set macros)"))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# harness score
# --------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness score", description=SCORE_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions", type=Path, help="predictions JSONL, a set folder, or a folder of set folders")
    parser.add_argument("--set", dest="set_name", help="evaluation set name (e.g. nq_open, truthfulqa)")
    parser.add_argument("--data", type=Path, help="local data file of the set (upstream or shared format)")
    parser.add_argument("--data-dir", type=Path, help="folder with local data files under their usual names")
    parser.add_argument("--aliases", type=Path, help="2WikiMultiHopQA id_aliases.json (aliases and demonyms)")
    parser.add_argument("--limit", type=int, help="the predictions cover the first N questions")
    parser.add_argument("--scorer", default="default", help="default | corver-official (default: default)")
    parser.add_argument("--truthfulqa-no-comment", action="store_true",
                        help="add 'I have no comment.' to TruthfulQA's correct answers (lm-eval's variant)")
    parser.add_argument("--no-truthfulqa-content-guard", dest="truthfulqa_content_guard", action="store_false",
                        help="TruthfulQA: docs/PROTOCOL.md §6's bare ROUGE decision, without the rule that an answer "
                             "with no content token (e.g. 'No') is wrong")
    parser.add_argument("--out", type=Path, help="output folder (default: beside the predictions)")
    return parser


# The scorer options of `harness score`, by the flag that sets each.
SCORER_FLAGS = {"truthfulqa_no_comment": "--truthfulqa-no-comment",
                "truthfulqa_content_guard": "--no-truthfulqa-content-guard"}


def _check_score_args(args: argparse.Namespace) -> dict:
    """Refuse bad arguments before any file is read, naming the option; returns the scorer options."""
    from .scorers import unused_options

    if args.limit is not None and args.limit < 1:
        raise HarnessError(f"--limit {args.limit}: give a positive number of questions, or leave it out for all.")
    if args.data is not None and args.data.is_dir():
        raise DataError(f"--data {args.data}: is a folder; give the set's data file, or pass the folder as "
                        f"--data-dir.")
    if args.data_dir is not None and not args.data_dir.is_dir():
        raise DataError(f"--data-dir {args.data_dir}: no such folder; give the folder holding the set's files "
                        f"(a single file goes to --data).")
    options = {key: getattr(args, key) for key in SCORER_FLAGS}
    unused = unused_options(args.scorer, options)  # also refuses an unknown --scorer, with a suggestion
    if unused:
        raise HarnessError(f"{SCORER_FLAGS[unused[0]]}: scorer {args.scorer} does not use it; drop the option "
                           f"or use --scorer default.")
    return options


def score_main(argv: list[str]) -> int:
    from factrl.harness.core.rundir import read_json, write_json

    from .generate import GENERATIONS
    from .metrics import run_metrics
    from .predictions import read_predictions
    from .provenance import recorded_generation
    from .results import score_set
    from .scorers import get_scorer
    from .sets import load_set, set_names

    args = _parser().parse_args(argv)
    scorer = get_scorer(args.scorer, **_check_score_args(args))
    target = args.predictions
    folder_of_sets = target.is_dir() and not (target / GENERATIONS).is_file()
    if target.is_dir():
        files = [target / GENERATIONS] if (target / GENERATIONS).is_file() else sorted(target.glob(f"*/{GENERATIONS}"))
        if not files:
            raise DataError(f"{target}: no {GENERATIONS} in it or in its sub-folders.")
    elif target.is_file():
        files = [target]
    else:
        raise DataError(f"{target}: no such file or folder.")
    if len(files) > 1 and (args.set_name or args.data or args.limit):
        raise HarnessError("--set, --data and --limit apply to one predictions file; score the files one by one.")
    if not logging.getLogger("factrl").handlers:
        logging.basicConfig(level=logging.INFO, format="%(message)s")

    results, roots = {}, set()
    for file in files:
        recorded = read_json(file.parent / "metrics.json") if (file.parent / "metrics.json").is_file() else {}
        recorded_set = recorded.get("set", {})
        set_name = (args.set_name or (file.parent.name if file.parent.name in set_names() else None)
                    or recorded_set.get("name"))
        if not set_name:
            raise HarnessError(f"{file}: cannot tell which set these predictions are for; pass --set NAME.")
        data = args.data
        source = recorded_set.get("source", "") if recorded_set.get("name") == set_name else ""
        if data is None and source.startswith("file:") and Path(source[5:]).is_file():
            data = Path(source[5:])
        limit = args.limit if args.limit is not None else recorded_set.get("limit")
        aliases = args.aliases or (recorded_set.get("aliases") if source else None)
        eval_set = load_set(set_name, data=data, data_dir=args.data_dir, aliases=aliases, limit=limit)
        generation = recorded_generation(file.parent, limit=limit, predictions=str(file.resolve()))
        # Results land in <root>/<set>/: in place for an evaluation's own files, else beside the file.
        root = args.out or (file.parent.parent if file.parent.name == set_name else file.parent)
        if args.out is None and scorer.name != "default":
            root = root / f"scorer-{scorer.name}"
        roots.add(root)
        results[set_name] = score_set(eval_set, read_predictions(file), scorer, generation, root / set_name,
                                      str(file))
    summary = run_metrics(results)
    if folder_of_sets and len(roots) == 1:  # a run's eval/: the run-level summary with the macro
        write_json(roots.pop() / "metrics.json", summary)
    print(summary_table(summary))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(score_main(sys.argv[1:]))

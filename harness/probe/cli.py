"""`harness probe`: score the probe panel through one or more methods' real rewards.

    harness probe method=corver                         # CorVer's reward, embedded model, demo pool
    harness probe method=knowrl model=tiny-llama pool=file pool.path=POOL.json
    harness probe -m method=corver,fspo,knowrl          # one table across methods
    harness probe -m method=corver,fspo,knowrl,rlfh,forag,nover --guarded   # originals and guarded variants

Options before or among the Hydra overrides: `--questions N` (pool questions, default 50),
`--out DIR` (default <output_dir>/probe/<methods>_<models>/), `--guarded` (also score each
method's guarded variant, configs/probe/guards.yaml, in a column beside the original),
`--guards-file FILE` (another guards file of that shape), `--obeying-judge` (also score each
judge-based column with the reference judge answering as a weak judge that follows grading
advice inside the material, `judge.obey_material=true`: what the judge-independent guards
bound). Writes probe.md, probe.html, probe.csv and probe.json there and prints the Markdown table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from .runner import DEFAULT_QUESTIONS, ProbeResult, probe_method

OPTIONS = ("--questions", "--out", "--guards-file")
FLAGS = ("--guarded", "--obeying-judge")


def split_options(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Our `--questions N` / `--out DIR` (also `--opt=value`) out of argv; the rest goes to Hydra."""
    options: dict[str, str] = {}
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        key, sep, value = arg.partition("=")
        if arg in FLAGS:
            options[arg[2:].replace("-", "_")] = "true"
        elif key in OPTIONS:
            if not sep:
                value = next(args, None)
                if value is None:
                    example = {"--questions": "50", "--out": "probe_out"}.get(key, "guards.yaml")
                    raise ConfigError(f"harness probe {key}: give a value, e.g. {key} {example}")
            options[key[2:].replace("-", "_")] = value
        else:
            rest.append(arg)
    return options, rest


def _questions(options: dict[str, str]) -> int:
    raw = options.get("questions", str(DEFAULT_QUESTIONS))
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"harness probe --questions {raw}: give a whole number of pool questions, at least 1")
    return n


def default_out(output_dir: str, results: list[ProbeResult]) -> Path:
    methods = "+".join(dict.fromkeys(r.method for r in results))
    models = "+".join(dict.fromkeys(r.model for r in results))
    return Path(output_dir) / "probe" / f"{methods}_{models}"


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nOverrides are Hydra's (method, model, pool, corpus, judge, evidence, key=value); "
              "see harness/probe/README.md for the panel.")
        return 0
    from ..engine.config import hydra_entry

    options, rest = split_options(list(argv))
    n = _questions(options)
    results: list[ProbeResult] = []
    output_dir: dict[str, Any] = {}

    guards = None
    if "guarded" in options or "guards_file" in options:
        from .guards import load_guards

        guards = load_guards(options.get("guards_file"))

    def probed(cfg: Any) -> ProbeResult:
        result = probe_method(cfg, n=n)
        results.append(result)
        if "obeying_judge" in options and (result.components.get("judge") or {}).get("backend") == "reference":
            from .guards import obeying_config

            results.append(probe_method(obeying_config(cfg), n=n))
        return result

    def task(cfg: Any) -> ProbeResult:
        result = probed(cfg)
        output_dir.setdefault("value", str(cfg.output_dir))
        if guards is not None:
            from .guards import guarded_config

            variant = guarded_config(cfg, guards)
            if variant is not None:
                probed(variant)
        return result

    status = hydra_entry(task, rest, "harness probe")
    if not results:
        return status or 2
    from .tables import markdown, write_tables

    out = Path(options["out"]) if "out" in options else default_out(output_dir["value"], results)
    paths = write_tables(results, out)
    print(markdown(results))
    print(f"tables: {', '.join(str(p) for p in paths.values())}")
    return status

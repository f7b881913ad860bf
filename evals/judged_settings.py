"""Defaults and checks of the judged evaluations' options (`eval.factscore_options`,
`eval.semantic_options`, `eval.simpleqa_grader_options`; configs/eval/base.yaml documents each).

Filled in place on `EvalSettings` over the file's values, so a caller's config may omit any
key (a given nested mapping is merged one level deep); every bad value is a
one-line ConfigError naming the option, raised before anything is loaded or generated.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.settings import defaults_from_yaml

GROUPS = ("factscore_options", "semantic_options", "simpleqa_grader_options")
PARSES = ("first_letter", "strict")
CLAIMS = ("verbatim", "factscore")
TEMPLATES = ("simple-evals", "short")
GRADED_TEXTS = ("response", "answer")


def defaults(group: str) -> dict[str, Any]:
    """The defaults of one options group: configs/eval/base.yaml (docs/PROTOCOL.md §6 values, documented there)."""
    return defaults_from_yaml(f"eval/base.yaml:{group}")


def _merged(group: str, given: dict | None) -> dict[str, Any]:
    out = defaults(group)
    for key, value in (given or {}).items():
        if key not in out:
            raise ConfigError(f"eval.{group}.{key} is not an option; use one of {', '.join(out)}.")
        if isinstance(out[key], dict):
            for sub, sub_value in (value or {}).items():
                if sub not in out[key]:
                    raise ConfigError(f"eval.{group}.{key}.{sub} is not an option; use one of "
                                      f"{', '.join(out[key])}.")
                out[key][sub] = sub_value
        else:
            out[key] = value
    return out


def _sample(group: str, key: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"eval.{group}.{key}={value}: give a positive number of questions, or null for all.")


def _sets(settings: Any, group: str, flag: str) -> None:
    opts = getattr(settings, group)
    if isinstance(opts["sets"], str):
        opts["sets"] = [opts["sets"]]
    if not set(opts["sets"]) & set(settings.sets):
        raise ConfigError(f"eval.{flag}=true but none of eval.{group}.sets ({', '.join(opts['sets'])}) is "
                          f"evaluated (eval.sets: {', '.join(settings.sets)}); add one to eval.sets or set "
                          f"eval.{group}.sets.")


def check_judged(settings: Any) -> None:
    for group in GROUPS:
        setattr(settings, group, _merged(group, getattr(settings, group)))
    fs, sem, sq = settings.factscore_options, settings.semantic_options, settings.simpleqa_grader_options
    _sample("factscore_options", "sample", fs["sample"])
    _sample("semantic_options", "sample", sem["sample"])
    _sample("semantic_options", "truthfulqa_sample", sem["truthfulqa_sample"])
    _sample("simpleqa_grader_options", "sample", sq["sample"])
    if not isinstance(fs["passages"], int) or fs["passages"] < 1:
        raise ConfigError(f"eval.factscore_options.passages={fs['passages']}: give at least 1 (docs/PROTOCOL.md §6: 3).")
    if not 0.0 <= float(fs["threshold"]) < 1.0:
        raise ConfigError(f"eval.factscore_options.threshold={fs['threshold']}: must be in [0, 1) "
                          "(docs/PROTOCOL.md §6: 0.3).")
    if fs["claims"] not in CLAIMS:
        raise ConfigError(f"eval.factscore_options.claims={fs['claims']!r}: use verbatim (the CorVer paper's "
                          f"extractor) or factscore (FActScore's per-sentence prompt).")
    if fs["demos"] is not None and fs["claims"] == "factscore":
        from .factscore.demos import load_demos

        load_demos(str(fs["demos"]))  # a bad file is a ConfigError now, not after generation
    if sq["parse"] not in PARSES:
        raise ConfigError(f"eval.simpleqa_grader_options.parse={sq['parse']!r}: use first_letter (simple-evals) "
                          f"or strict.")
    if sq["template"] not in TEMPLATES:
        raise ConfigError(f"eval.simpleqa_grader_options.template={sq['template']!r}: use simple-evals (the released "
                          f"grader) or short (the harness's rubric).")
    if sq["graded_text"] not in GRADED_TEXTS:
        raise ConfigError(f"eval.simpleqa_grader_options.graded_text={sq['graded_text']!r}: use response (the whole "
                          f"completion, as simple-evals) or answer.")
    if settings.factscore:
        _sets(settings, "factscore_options", "factscore")
    if settings.simpleqa_grader:
        _sets(settings, "simpleqa_grader_options", "simpleqa_grader")

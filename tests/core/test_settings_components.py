"""The `settings` entries of every method's components, built through the shared builders
(`Method.settings_component`, `settings_entry`; docs/CONTRACTS.md "Provenance of reward
components"), are byte for byte what the hand-written entries were: the JSON text of each method's
`components(reward)` on fixed inputs is pinned in settings_components.json.

The file was written by the hand-written entries before they moved to the builders (the
refactor's "before"); a change to a method's entry is a change of its recorded components, which
updates this file (`python -m tests.core.test_settings_components --write`) together with the
method's version and changelog. Rewards are stand-in objects carrying the attributes the entries
read (settings parsed from the real defaults, the real prompts, fixed service descriptions): the
entries are pure functions of them, and opening a judge or an NLI model would add nothing here.
"""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from factrl.harness.core.method import Method

PINNED = Path(__file__).with_name("settings_components.json")


def _service(kind: str, **extra) -> SimpleNamespace:
    entry = {"kind": kind, "backend": f"{kind}-backend", "model": f"{kind}-model", "revision": "r1",
             "stand_in": False, "label": f"{kind} label"}
    return SimpleNamespace(describe=lambda: dict(entry), settings=SimpleNamespace(max_failed_share=0.25), **extra)


def _corver(config):
    from factrl.methods.corver import METHOD
    from factrl.methods.corver.token_reward import CorVerReward

    method = METHOD(config)
    counter = SimpleNamespace(description={"backend": "local", "index_dir": "/idx", "tokenizer": "t", "documents": 3,
                                           "tokens": 9}, manifest_hash="h")
    extractor = SimpleNamespace(name="heuristic")
    uses = method.settings.lambda_c != 0
    return method, CorVerReward(tokenizer=None, settings=method.settings, extractor=extractor if uses else None,
                                counter=counter if uses else None, corpus_config={"backend": "local", "name": "demo"})


def _fspo(config):
    from factrl.methods.fspo import METHOD

    method = METHOD(config)
    return method, SimpleNamespace(settings=method.settings, k=3, nli=_service("nli"), store=_service("evidence"),
                                   train={"completions_per_question": 4, "learning_rate": 2e-6, "beta": 0.04})


def _knowrl(config):
    from factrl.methods.knowrl import METHOD
    from factrl.methods.knowrl.prompts import prompts_for

    method = METHOD(config)
    grade, facts = prompts_for(method.settings.grade_parse)
    return method, SimpleNamespace(settings=method.settings, k=3, judge=_service("judge"), nli=_service("nli"),
                                   store=_service("evidence"), grade_prompt=grade, facts_prompt=facts, prefix="<think>")


def _rlfh(config):
    from factrl.methods.rlfh import METHOD
    from factrl.methods.rlfh.prompts import prompts_for

    method = METHOD(config)
    s = method.settings
    return method, SimpleNamespace(settings=s, judge=_service("judge"), store=_service("evidence"),
                                   prompts=prompts_for(s.parser, s.decoding))


def _forag(config):
    from factrl.methods.forag import DECOMPOSE, METHOD, VERIFY

    method = METHOD(config)
    return method, SimpleNamespace(settings=method.settings, k=3, judge=_service("judge"), store=_service("evidence"),
                                   decompose_prompt=DECOMPOSE, verify_prompt=VERIFY)


def _nover(config):
    method = importlib.import_module("factrl_nover").NoverMethod(config)
    return method, SimpleNamespace(settings=method.settings, model_cfg={"name": "tiny-llama", "id": "embedded:tiny-llama",
                                                                        "revision": None}, save_steps=1, group_size=2)


def _truthrl(config):
    method = importlib.import_module("factrl_truthrl").TruthRLMethod(config)
    judge = _service("judge") if method.settings.verifier == "judge" else None
    return method, SimpleNamespace(settings=method.settings, judge=judge, prefix="<think>")


def _binary_rar(config):
    method = importlib.import_module("factrl_binary_rar").BinaryRARMethod(config)
    return method, SimpleNamespace(settings=method.settings, judge=_service("judge"), store=_service("evidence"),
                                   prefix="<think>")


def _rlcr(config):
    method = importlib.import_module("factrl_rlcr").RLCRMethod(config)
    return method, SimpleNamespace(settings=method.settings, prefix="")


# (case name, builder, `method.*` overrides): every method's defaults, plus CorVer's ablation A1.
CASES = [("corver", _corver, None), ("corver-a1", _corver, {"lambda_c": 0.0}), ("fspo", _fspo, None),
         ("knowrl", _knowrl, None), ("rlfh", _rlfh, None), ("forag", _forag, None), ("nover", _nover, None),
         ("truthrl", _truthrl, None), ("binary_rar", _binary_rar, None), ("rlcr", _rlcr, None)]


def components_text(builder, config) -> str:
    """The JSON text of the method's components, keys in the order the method writes them (the
    order components.json keeps)."""
    method, reward = builder(config)
    return json.dumps(method.components(reward))


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_components_are_byte_identical_to_the_hand_written_entries(case):
    _, builder, config = next(c for c in CASES if c[0] == case)
    pinned = json.loads(PINNED.read_text())
    assert components_text(builder, config) == pinned[case]


def test_the_default_entry_is_the_parsed_settings():
    from dataclasses import dataclass

    from factrl.harness.core.method import settings_entry
    from factrl.harness.core.settings import Settings

    @dataclass(frozen=True)
    class Two(Settings):
        OWNER = "method"
        DEFAULTS = {"a": 1.0, "b": "x"}
        IGNORE = ("name",)
        RANGES = {"a": "any"}
        a: float
        b: str

    class WithSettings(Method):
        name, label, description, settings_class = "two", "Two", "test method", Two

    method = WithSettings({"a": 2})
    entry = {"kind": "settings", "backend": None, "model": None, "revision": None, "stand_in": False,
             "label": "Two settings", "a": 2.0, "b": "x"}
    assert method.components(None) == {"settings": entry}
    assert list(method.settings_component(None, guards=[])) == [*entry, "guards"]
    assert settings_entry("L", {"z": 1, "a": 2}) == {**{k: entry[k] for k in list(entry)[:5]}, "label": "L", "z": 1, "a": 2}
    assert Method().components(None) == {}  # no settings class: nothing to record


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    PINNED.write_text(json.dumps({name: components_text(b, c) for name, b, c in CASES}, indent=1) + "\n")
    print(f"wrote {PINNED}")

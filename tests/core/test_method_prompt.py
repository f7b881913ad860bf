"""Method.prompt_addition (interface 5): appended to the shared system prompt in training, the
evaluator and the probe, recorded beside the shared prompt's hash; absent, every prompt, hash and
record keeps its bytes."""
from __future__ import annotations

from factrl.harness.engine.config import compose
from factrl.harness.core.method import INTERFACE_VERSION, Method
from factrl.harness.core.prompts import ANTI_LOOP_LINE, SYSTEM_PROMPT, addition_of, prompt_hash, system_prompt
from factrl.harness.core.registry import get_method, names
from factrl.harness.training.engine import build_dataset, method_system, prompt_component

ADDITION = "State your confidence in <confidence> </confidence> tags."


class Asking(Method):
    name = "asking"
    description = "a method whose reward reads a stated confidence"
    prompt_addition = ADDITION


class Plain(Method):
    name = "plain"
    description = "no addition"


def test_the_shared_prompt_keeps_its_bytes_and_its_frozen_hash():
    assert INTERFACE_VERSION == 7
    assert system_prompt(False) == SYSTEM_PROMPT and system_prompt(False, addition=None) == SYSTEM_PROMPT
    assert system_prompt(True) == f"{SYSTEM_PROMPT} {ANTI_LOOP_LINE}"
    # leaderboard/store/versions.py freezes this hash for version 1: it must not move.
    assert prompt_hash() == prompt_hash(system_prompt(False)) == "c22192799d5ac4ef"


def test_the_addition_follows_the_shared_prompt_and_the_anti_loop_line():
    assert system_prompt(False, addition=ADDITION) == f"{SYSTEM_PROMPT} {ADDITION}"
    assert system_prompt(True, ADDITION) == f"{SYSTEM_PROMPT} {ANTI_LOOP_LINE} {ADDITION}"
    assert prompt_hash(system_prompt(False, addition=ADDITION)) != prompt_hash()


def test_no_registered_method_without_an_addition_changes_its_training_prompt():
    for name in names("methods"):
        method = get_method(name)
        if method.prompt_addition is None:
            assert method_system(method) is None and prompt_component(method) == {}, name
    assert method_system(Plain) is None and prompt_component(Plain) == {}


def test_training_rows_carry_the_addition_in_the_system_turn():
    rows = [{"id": "1", "question": "Who wrote Hamlet?", "answers": ["Shakespeare"]}]
    cfg = compose(["model=tiny-llama"])
    plain = build_dataset(rows, cfg.model, system=method_system(Plain))[0]["prompt"]
    asked = build_dataset(rows, cfg.model, system=method_system(Asking))[0]["prompt"]
    assert plain[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert asked[0] == {"role": "system", "content": f"{SYSTEM_PROMPT} {ADDITION}"} and asked[1:] == plain[1:]
    folded = compose(["model=tiny-llama", "model.system_role=false"])  # no system role: in the first user turn
    turn = build_dataset(rows, folded.model, system=method_system(Asking))[0]["prompt"][0]["content"]
    assert turn == f"{SYSTEM_PROMPT} {ADDITION}\n\nWho wrote Hamlet?"


def test_the_prompt_component_records_text_and_hashes():
    entry = prompt_component(Asking)["prompt"]
    assert entry["kind"] == "prompt" and entry["stand_in"] is False and entry["text"] == ADDITION
    assert entry["method"] == "asking" and entry["hash"] == prompt_hash(ADDITION) and entry["chars"] == len(ADDITION)
    assert entry["system_hash"] == prompt_hash(f"{SYSTEM_PROMPT} {ADDITION}")


def test_the_evaluator_finds_the_addition_of_the_configs_method():
    assert addition_of(compose(["method=corver"])) == (None, "corver")
    assert addition_of(compose(["method=raw"])) == (None, "raw")
    assert addition_of(None) == (None, "")

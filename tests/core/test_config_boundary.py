"""The config error boundary of `harness run`, through the real CLI: a mistyped key, group option
or value type, and a plugin reward that breaks the contract, each stop with ONE line that names
the key (with the closest valid one) or the method and the fix; no traceback, no Hydra advice to
write `+key`, and no run directory for what can be checked before the run starts."""
from __future__ import annotations

import pytest

from tests.core.test_registry import install_plugin
from tests.helpers import harness


def _run(tmp_path, *overrides, env=None):
    out = tmp_path / "runs"
    result = harness("run", *overrides, f"output_dir={out}", f"leaderboard.store={tmp_path / 'lb.sqlite3'}", env=env)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return result, lines, out


@pytest.mark.parametrize("override, expected", [
    ("train.stepz=2", "harness run: error: train.stepz: unknown key (did you mean train.steps?); valid: steps, "),
    ("trian.steps=2", "harness run: error: trian: unknown key (did you mean train?); valid: "),
    ("method.lambda_cc=2", "harness run: error: method.lambda_cc: unknown key (did you mean method.lambda_c?); "),
    ("+method.lambda_cc=2", "harness run: error: method=corver: method.lambda_cc: unknown key (did you mean "
                            "method.lambda_c?); valid: "),
    ("+train.stepz=2", "harness run: error: train.stepz: unknown key (did you mean train.steps?)"),
    ("judge=opnai", "harness run: error: unknown judge 'opnai'. Did you mean 'openai'? Valid: embedded, none, openai, reference."),
    ("evidence=fil", "harness run: error: unknown evidence 'fil'. Did you mean 'file'? Valid: demo, file."),
    ("train.steps=two", "harness run: error: train.steps='two' is not an integer; set a whole number"),
    ("eval.limit=some", "harness run: error: eval.limit='some' is not an integer; set a whole number"),
    ("train.ppo.gamma=2", "harness run: error: train.ppo.gamma=2.0 must be in (0, 1]"),
])
def test_a_bad_key_option_or_type_is_one_line_before_any_run_directory(tmp_path, override, expected):
    result, lines, out = _run(tmp_path, override)
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(expected), result.stderr[-2000:]
    assert "+" + override.lstrip("+").split("=")[0] not in result.stderr  # never Hydra's `+key` advice
    assert not out.exists()  # failed before a run directory was made


def test_a_plugin_method_with_a_typo_gets_its_own_keys_suggested(tmp_path):
    site = install_plugin(tmp_path, "bonusplug", "bonus_plugin", "Bonus", BROKEN_REWARD)
    result, lines, _ = _run(tmp_path, "method=bonusplug", "method.bonsu=2", env={"PYTHONPATH": str(site)})
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert lines[0] == "harness run: error: method.bonsu: unknown key (did you mean method.bonus?); valid: name, " \
                       "bonus, mode"


BROKEN_REWARD = '''
from factrl.harness.core.method import Method, RewardOutput


class Bonus(Method):
    """A plugin whose reward breaks the contract: a TRL-style list, or one value too many."""

    name = "bonusplug"
    algorithm = "grpo"
    description = "test plugin: a reward that returns the wrong thing"
    config_defaults = {"bonus": 1.0, "mode": "list"}

    def build_reward(self, ctx):
        mode = str(self.config.mode)

        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            if mode == "list":
                return [1.0 for _ in completions]
            return RewardOutput([[1.0] * (len(ids) + 1) for ids in completion_ids])

        return reward
'''


@pytest.mark.parametrize("mode, expected", [
    ("list", "harness run: error: method=bonusplug: its reward returned list, not RewardOutput; return "
             "factrl.harness.core.method.RewardOutput(token_returns=[one list per completion], ...)"),
    ("count", "harness run: error: method=bonusplug: its reward: completion 0 has "),
])
def test_a_plugin_reward_that_breaks_the_contract_is_one_line_naming_the_method(tmp_path, mode, expected):
    site = install_plugin(tmp_path, "bonusplug", "bonus_plugin", "Bonus", BROKEN_REWARD)
    result, lines, _ = _run(tmp_path, "method=bonusplug", f"method.mode={mode}", "model=tiny-llama", "train.steps=1",
                            "train.questions_per_step=1", "train.completions_per_question=2",
                            "train.max_completion_length=4", "eval.limit=1", env={"PYTHONPATH": str(site)})
    assert result.returncode == 2, result.stderr[-3000:]
    # (the progress bar of the step that failed may share the terminal line)
    errors = [line[line.index("harness run: error:"):] for line in lines if "harness run: error:" in line]
    assert len(errors) == 1 and errors[0].startswith(expected), result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "AttributeError" not in result.stderr

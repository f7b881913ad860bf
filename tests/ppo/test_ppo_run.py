"""`harness run` trains an `algorithm: ppo` method (a third-party plugin here) end to end:
run directory, critic beside the adapter, timings with a critic phase, leaderboard rows."""
from __future__ import annotations

import json

import pytest

from tests.core.test_registry import install_plugin
from tests.helpers import harness

PPO_PLUGIN = '''
from factrl.harness.core.method import Method, RewardOutput


class LastToken(Method):
    """A toy PPO method: +1 on the last token of completions that close an answer block."""

    name = "lasttoken"
    algorithm = "ppo"
    description = "toy PPO plugin: a sparse reward on the last token"

    def build_reward(self, ctx):
        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            out = []
            for text, ids in zip(completions, completion_ids):
                r = [0.0] * len(ids)
                if r:
                    r[-1] = 1.0 if "</answer>" in text else -0.5
                out.append(r)
            return RewardOutput(out, {"closed_rate": sum("</answer>" in t for t in completions) / len(completions)})

        return reward
'''


@pytest.mark.slow  # a plugin install and a real `harness run` (train + evaluate; about 30 s on 2 shared cores)
def test_harness_run_trains_a_ppo_method_and_records_it(tmp_path):
    site = install_plugin(tmp_path, "lasttoken", "lasttoken_plugin", "LastToken", PPO_PLUGIN)
    out, store = tmp_path / "runs", tmp_path / "lb.sqlite"
    result = harness("run", "method=lasttoken", "model=tiny-llama", f"output_dir={out}", f"leaderboard.store={store}",
                     "train.ppo.epochs=2", env={"PYTHONPATH": str(site)})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run = next(out.glob("*-lasttoken-tiny-llama-*"))
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["method_algorithm"] == "ppo"
    assert info["leaderboard"]["status"] == "recorded" and info["leaderboard"]["rows"]
    assert (run / "train" / "adapter" / "adapter_config.json").is_file()
    assert not (run / "train" / "adapter" / "critic").exists()  # the adapter holds the policy only
    assert (run / "train" / "critic" / "critic.safetensors").is_file()
    logged = [json.loads(x) for x in (run / "train" / "log.jsonl").read_text().splitlines()]
    # tiny-llama's protocol: 2 steps = 2 rollouts, x 2 epochs = 4 optimizer steps
    assert [e["step"] for e in logged if "train_runtime" not in e] == [1, 2, 3, 4]
    assert "rewards/lasttoken/closed_rate" in logged[0] and "value_loss" in logged[0]
    timings = json.loads((run / "timings.json").read_text())
    assert timings["phases"]["critic"]["calls"] > 0 and timings["steps"] == 2
    assert (run / "eval" / "demo" / "metrics.json").is_file()

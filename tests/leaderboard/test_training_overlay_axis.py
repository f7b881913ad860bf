"""The overlay of every method's curves puts runs on one x axis: the share of each run's training.

A PPO run logs one optimizer step per minibatch and epoch (the demo's RLFH: 40 for 10 rollouts), a
GRPO run one per rollout (10); plotted against raw steps, the GRPO curves end a quarter of the way
along the PPO ones."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from factrl.leaderboard.render import training_plots


def _training(steps: int, value) -> dict:
    return {"steps": list(range(1, steps + 1)),
            "curves": {"kl": [value(s) for s in range(1, steps + 1)],
                       "rewards/m/format_rate": [0.5] * steps}}


def test_share_of_training_ends_every_run_at_one():
    ppo, grpo = _training(40, float), _training(10, float)
    assert training_plots.share_of_training([10, 20, 40], ppo) == [0.25, 0.5, 1.0]
    assert training_plots.share_of_training([5, 10], grpo) == [0.5, 1.0]
    # a key logged on the first steps only still sits where it was logged, not stretched to the end
    assert training_plots.share_of_training([1, 2], ppo) == [0.025, 0.05]


def test_the_overlay_draws_both_runs_over_the_same_span(tmp_path, monkeypatch):
    drawn = []
    original = training_plots._style

    def spy(ax, title, count, legend, xlabel="step"):
        drawn.append((title, xlabel, [list(line.get_xdata()) for line in ax.get_lines()]))
        return original(ax, title, count, legend, xlabel)

    monkeypatch.setattr(training_plots, "_style", spy)
    out = training_plots.model_overlay([("RLFH", _training(40, float)), ("CorVer", _training(10, float))],
                                       "smollm2-135m", tmp_path / "overlay.png")
    assert (tmp_path / "overlay.png").is_file() and out == tmp_path / "overlay.png"
    kl = next(d for d in drawn if d[0] == "KL to reference")
    assert kl[1] == "share of training (step / last step)"
    assert [xs[-1] for xs in kl[2]] == [1.0, 1.0] and [xs[0] for xs in kl[2]] == [0.025, 0.1]

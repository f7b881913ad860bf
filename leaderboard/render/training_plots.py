"""Training curves per step (matplotlib Agg, PNG), from the rows' `training` (leaderboard/curves.py).

- `run_curves`: one run, one row of panels: the reward (mean, with a band of one `reward_std`),
  its components (every `rewards/<m>/*_mean` the method logs but its total), the behaviour rates
  it counts (`format_rate`, `correct_rate`, `refusal_rate`, `supported_share`, ...), the share of
  completions without a signal, and the KL to the reference (a key the run lacks: its panel says
  so). The published index shows it under the line's row and the run page shows the same file.
- `model_overlay`: every trained method of one model in the panels that compare across methods
  (format rate, no-signal share, KL, mean completion length): rewards do not share a scale.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import curves as curvelib
from .plots import _figure, _save, _text

RATE_ORDER = ("format_rate", "correct_rate", "refusal_rate", "supported_share", "factual_rate", "empty_rate")


def _method_keys(curves: dict[str, Any]) -> dict[str, list[str]]:
    """{panel: curve keys} of one run's kept curves."""
    parts = [k.split("/") for k in curves if k.startswith("rewards/")]
    components = sorted("/".join(p) for p in parts if p[2].endswith("_mean") and p[2] not in ("mean", "reward_mean"))
    rates = sorted(("/".join(p) for p in parts if p[2].endswith(("_rate", "_share"))),
                   key=lambda k: (RATE_ORDER.index(k.split("/")[2]) if k.split("/")[2] in RATE_ORDER else 99, k))
    return {"components": components, "rates": rates[:6],
            "no_signal": sorted("/".join(p) for p in parts if p[2] == "no_signal")}


def _style(ax, title: str, drawn: int, legend: bool, xlabel: str = "step") -> None:
    ax.set_title(_text(title), fontsize=9)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.set_xlabel(xlabel, fontsize=7)
    if not drawn:
        ax.text(0.5, 0.5, "not logged", ha="center", va="center", fontsize=8, color="grey", transform=ax.transAxes)
    elif legend:
        ax.legend(fontsize=6, loc="best")


def _panel(ax, title: str, training: dict, keys: list[str], legend: bool, share: bool = False) -> None:
    drawn = 0
    for key in keys:
        steps, values = curvelib.series(training, key)
        if values:
            ax.plot(steps, values, marker="o", markersize=2.5, linewidth=1.2, label=_text(key.split("/")[-1]))
            drawn += 1
    if share:  # rates and shares on one fixed axis, so two runs' panels read alike
        ax.set_ylim(-0.03, 1.03)
    _style(ax, title, drawn, legend)


def run_curves(training: dict[str, Any] | None, title: str, path: Path) -> Path | str:
    """The run's panels (module docstring) as one PNG, or a note why there is none."""
    if not training or not training.get("curves"):
        return f"{title}: no training curves (train/log.jsonl absent, or recorded before rows kept them)"
    keys = _method_keys(training["curves"])
    fig = _figure(13.0, 2.6)
    axes = fig.subplots(1, 5)
    steps, reward = curvelib.series(training, "reward")
    if reward:
        axes[0].plot(steps, reward, marker="o", markersize=2.5, linewidth=1.4, color="C0")
        s_steps, spread = curvelib.series(training, "reward_std")
        if spread and s_steps == steps:
            axes[0].fill_between(steps, [r - s for r, s in zip(reward, spread)],
                                 [r + s for r, s in zip(reward, spread)], color="C0", alpha=0.15, linewidth=0)
    _style(axes[0], "reward (mean ± std)", len(reward), False)
    _panel(axes[1], "reward components", training, keys["components"], True)
    _panel(axes[2], "behaviour rates", training, keys["rates"], True, share=True)
    _panel(axes[3], "no-signal share", training, keys["no_signal"], False, share=True)
    _panel(axes[4], "KL to reference", training, ["kl"], False)
    fig.suptitle(_text(title), fontsize=10)
    return _save(fig, path)


def share_of_training(steps: list[int], training: dict[str, Any]) -> list[float]:
    """Steps as the share of the run's training done (its last logged step = 1). The overlay's x
    axis: methods count optimizer steps differently (a PPO rollout takes `train.ppo.epochs` x
    minibatches optimizer steps, a GRPO rollout one), so step 10 of two methods is not the same
    point of training."""
    last = max([*training.get("steps", []), *steps], default=0)
    return [s / last for s in steps] if last > 0 else [float(s) for s in steps]


def model_overlay(runs: list[tuple[str, dict[str, Any]]], model: str, path: Path) -> Path | str:
    """Every trained method of one model: format rate, no-signal share, KL, mean length, against
    the share of each run's training done (`share_of_training`)."""
    runs = [(label, t) for label, t in runs if t and t.get("curves")]
    if not runs:
        return f"training curves of {model}: no trained run keeps its curves"
    fig = _figure(13.0, 2.9)
    axes = fig.subplots(1, 4)
    panels = (("format rate", "format_rate"), ("no-signal share", "no_signal"), ("KL to reference", "kl"),
              ("mean completion length (tokens)", "completions/mean_length"))
    for ax, (title, name) in zip(axes, panels):
        drawn = 0
        for index, (label, training) in enumerate(runs):
            key = name if "/" in name or name == "kl" else next(
                (k for k in training["curves"] if k.startswith("rewards/") and k.endswith("/" + name)), None)
            steps, values = curvelib.series(training, key) if key else ([], [])
            if values:
                ax.plot(share_of_training(steps, training), values, marker="o", markersize=2.5, linewidth=1.2,
                        color=f"C{index % 10}", label=_text(label))
                drawn += 1
        if name in ("format_rate", "no_signal"):
            ax.set_ylim(-0.03, 1.03)
        _style(ax, title, drawn, False, xlabel="share of training (step / last step)")
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=7)
    fig.suptitle(_text(f"{model}: training curves of every trained method"), fontsize=10)
    return _save(fig, path)

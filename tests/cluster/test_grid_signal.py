"""`harness grid`'s signal check and `publish:` (harness/engine/grid/checks.py, publish.py): the demo
grid holds every method; a sized-down grid on the tiny model fails loudly when a method's no-signal
share is above the threshold, and publishes its rows with the probe when it is not."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import ConfigError, HarnessError
from factrl.harness.engine.grid import load_grid
from factrl.harness.engine.grid.cli import main

DEMO_METHODS = ["raw", "corver", "fspo", "knowrl", "rlfh", "forag", "nover"]
BEYOND_PAPER = ["truthrl", "binary_rar", "rlcr"]  # plugins, a block of their own


def test_demo_grid_runs_every_method_on_the_embedded_model_and_publishes_the_probe():
    from factrl.harness.core.registry import all_methods

    grid = load_grid("demo", [])  # the paper's rows; the plugins' block is optional (the 30-minute budget)
    assert [c.method for c in grid.cells] == DEMO_METHODS and {c.model for c in grid.cells} == {"smollm2-135m"}
    assert grid.left_out == ["beyond-paper"]
    grid = load_grid("demo", [], blocks=["demo", "beyond-paper"])
    assert [c.method for c in grid.cells] == DEMO_METHODS + BEYOND_PAPER and grid.left_out == []
    assert [c.block for c in grid.cells] == ["demo"] * len(DEMO_METHODS) + ["beyond-paper"] * len(BEYOND_PAPER)
    assert set(DEMO_METHODS + BEYOND_PAPER) <= set(all_methods())  # NOVER and the three: plugins, installed by make setup
    assert grid.max_no_signal_share == 0.5
    assert grid.publish["probe"]["methods"] == ["corver", "fspo", "knowrl", "rlfh", "forag", *BEYOND_PAPER]
    assert load_grid("tiny", []).publish is None and load_grid("tiny", []).max_no_signal_share == 0.5  # defaults


def test_an_optional_block_runs_only_when_named(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text(f"overrides: [output_dir={tmp_path}]\n"
                    "blocks: [{name: a, methods: [raw], models: [tiny-llama], seeds: [1]},\n"
                    "         {name: b, optional: true, methods: [corver], models: [tiny-llama], seeds: [1]}]\n")
    assert [c.method for c in load_grid(str(path), []).cells] == ["raw"]
    assert [c.method for c in load_grid(str(path), [], blocks=["b"]).cells] == ["corver"]
    assert [c.method for c in load_grid(str(path), [], blocks=["a", "b"]).cells] == ["raw", "corver"]
    assert main([str(path), "--dry-run"]) == 0
    assert f"optional block(s) not run: b (to add them: harness grid {path} --block a --block b)" in capsys.readouterr().out
    path.write_text("blocks: [{name: b, optional: true, methods: [raw], models: [tiny-llama]}]\n")
    with pytest.raises(ConfigError, match=r"every block is optional; name the ones to run with --block \(b\)"):
        load_grid(str(path), [])
    path.write_text("blocks: [{name: b, optional: yes please, methods: [raw], models: [tiny-llama]}]\n")
    with pytest.raises(ConfigError, match=r"blocks\[0\].optional: must be true or false"):
        load_grid(str(path), [])


@pytest.mark.parametrize("text, message", [
    ("signal: {max_no_signal_share: 2}", r"signal.max_no_signal_share=2: give a share of completions between 0 and 1"),
    ("signal: {max_share: 0.1}", r"signal must be a mapping \{max_no_signal_share: 0.5\}"),
    ("publish: {site: x}", r"publish must be a mapping with keys out, probe, store"),
    ("publish: {probe: {methods: corver}}", r"publish.probe must be \{methods: \[corver, ...\], questions: N >= 1\}"),
])
def test_bad_signal_and_publish_settings_name_the_field(tmp_path, text, message):
    path = tmp_path / "mine.yaml"
    path.write_text(f"{text}\nblocks: [{{methods: [raw], models: [tiny-llama]}}]\n")
    with pytest.raises(ConfigError, match=message):
        load_grid(str(path), [])
    with pytest.raises(ConfigError, match="--max-no-signal=x: give a share"):
        main(["tiny", "--dry-run", "--max-no-signal", "x"])


@pytest.mark.slow  # two tiny runs (raw, one PPO step of RLFH) in subprocesses, then the probe: ~40 s on 2 cores
def test_a_method_without_signal_fails_the_grid_and_one_with_it_is_published(tmp_path, capfd):
    runs = tmp_path / "runs"
    path = tmp_path / "mini.yaml"
    path.write_text(f"overrides: [output_dir={runs}, eval.limit=2, train.steps=1, train.max_completion_length=16, "
                    "train.ppo.epochs=1]\n"
                    "publish: {out: site, store: lb.sqlite, probe: {methods: [rlfh], questions: 2}}\n"
                    "blocks: [{name: one, methods: [raw, rlfh], models: [tiny-llama], seeds: [42]}]\n")
    with pytest.raises(HarnessError, match=r"1 method\(s\) of grid mini had no signal for more than 0 of their"):
        main([str(path), "--max-no-signal", "0"])
    out = capfd.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("no signal: ")]
    assert "method rlfh had no reward signal for" in line and "(threshold signal.max_no_signal_share=0)" in line
    assert "likely fix: " in line
    assert not (runs / "site").exists()  # nothing published
    assert main([str(path), "--max-no-signal", "1"]) == 0  # every cell done: the check, then publish
    out = capfd.readouterr().out
    assert "nothing to launch" in out and "  signal: rlfh" in out and "published grid mini" in out
    page = (runs / "site" / "leaderboard.md").read_text(encoding="utf-8")
    assert "### Difference to Raw (pp), with intervals and MDE" in page and "| tiny-llama | RLFH" in page
    assert "## Reward-robustness probe" in page and (runs / "site" / "probe.json").is_file()
    assert "Difference to Raw" in (runs / "site" / "index.html").read_text(encoding="utf-8")
    # The run viewer of every cell: a page per run, side by side per set (leaderboard/viewer).
    assert len(list((runs / "site" / "viewer" / "runs").glob("*.html"))) == 2 and list((runs / "site" / "viewer" / "compare").glob("*.html"))
    assert "viewer: 2 run page(s)" in out

"""Checkpoints are whole or absent (harness/training/checkpoints.py): a kill -9 at any moment of a
save never blocks the resume, a checkpoint missing a part the method needs is never resumed, and
the resumed run ends where an uninterrupted one does, bit for bit."""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from factrl.harness.training import checkpoints
from tests.kills import published, run_until, step_file, step_folder

# Three GRPO steps, a checkpoint after each, on the toy method whose reward reads a frozen adapter
# copy that is mixed at every checkpoint (the NOVER proxy's mechanics): the copies are a part of
# the checkpoint that transformers does not know about.
OVERRIDES = ["train.learning_rate=1e-2", "train.steps=3", "train.save_steps=1", "train.completions_per_question=2",
             "train.max_completion_length=8"]


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "adapter_model.safetensors"))


@pytest.mark.slow  # 5 processes (about 70 s on 2 shared cores)
def test_kills_at_every_moment_of_a_save_resume_to_the_uninterrupted_run(tmp_path):
    from tests.core.toy_policy_training import train_policy_toy

    train_policy_toy(tmp_path / "straight", OVERRIDES)
    run = tmp_path / "killed"
    train = run / "train"
    cmd = [sys.executable, "-m", "tests.core.toy_policy_training", str(run), *OVERRIDES]
    log = tmp_path / "attempts.log"
    # The first moment of step 1's save; step 2 after TRL's files, before the copies (a checkpoint
    # transformers would accept); step 3 just after it was published.
    assert run_until(cmd, log, step_folder(train, 1)) == -9
    assert not (train / "checkpoint-1").exists() or not checkpoints.problems(train / "checkpoint-1", [])
    assert run_until(cmd, log, step_file(train, 2, "trainer_state.json")) == -9
    assert run_until(cmd, log, published(train, 3)) in (-9, 0)  # the last save may win the race
    assert run_until(cmd, log) == 0
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert not list(train.glob("tmp-checkpoint-*"))
    a, b = _weights(tmp_path / "straight" / "train" / "adapter"), _weights(train / "adapter")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    straight = (tmp_path / "straight" / "train" / "reward_records.jsonl").read_text().splitlines()
    killed = (train / "reward_records.jsonl").read_text().splitlines()
    assert killed == straight  # step 3 read the copy mixed at checkpoint 2, restored on resume
    copies = load_file(str(train / "checkpoint-3" / "policy_adapters" / "snap" / "adapter.safetensors"))
    reference = load_file(str(tmp_path / "straight" / "train" / "checkpoint-3" / "policy_adapters" / "snap" /
                              "adapter.safetensors"))
    assert all(torch.equal(copies[k], reference[k]) for k in reference)


def _fake_checkpoint(folder: Path, files: dict[str, bytes], seal: bool) -> Path:
    staged = checkpoints.staging_root(folder.parent, int(folder.name.rsplit("-", 1)[1])) / folder.name
    staged.mkdir(parents=True)
    for name, data in files.items():
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        (staged / name).write_bytes(data)
    if seal:
        return checkpoints.seal(staged, folder, files)
    staged.rename(folder)  # as an older harness left it: in place, no manifest
    staged.parent.rmdir()
    return folder


def test_resume_point_takes_the_newest_complete_checkpoint_and_says_what_it_skipped(tmp_path, caplog):
    parts = {"trainer_state.json": b"{}", "optimizer.pt": b"x" * 10, "critic.safetensors": b"c"}
    _fake_checkpoint(tmp_path / "checkpoint-2", parts, seal=True)
    cut = _fake_checkpoint(tmp_path / "checkpoint-4", parts, seal=True)
    (cut / "optimizer.pt").write_bytes(b"x" * 3)  # a manifest file cut short
    _fake_checkpoint(tmp_path / "checkpoint-6", {"trainer_state.json": b"{}", "optimizer.pt": b"x"},
                     seal=False)  # an older harness's checkpoint without its critic
    (tmp_path / "checkpoint-8").mkdir()  # what a kill left under the in-place layout
    (tmp_path / "tmp-checkpoint-9" / "checkpoint-9").mkdir(parents=True)
    required = ["trainer_state.json", "optimizer.pt", "critic.safetensors"]
    assert checkpoints.resume_point(tmp_path, required, clean=False) == str(tmp_path / "checkpoint-2")
    assert (tmp_path / "checkpoint-8").is_dir()  # clean=False: a reader that does not own the folder
    with caplog.at_level(logging.WARNING, logger="factrl.harness.training.checkpoints"):
        assert checkpoints.resume_point(tmp_path, required) == str(tmp_path / "checkpoint-2")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "checkpoint-8 (no critic.safetensors, no optimizer.pt, no trainer_state.json)" in lines[0]
    assert "checkpoint-6 (no critic.safetensors)" in lines[0]
    assert "checkpoint-4 (optimizer.pt cut short (3 of 10 bytes))" in lines[0]
    assert lines[0].endswith("removed; resuming from checkpoint-2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2"]
    manifest = json.loads((tmp_path / "checkpoint-2" / checkpoints.MANIFEST).read_text())
    assert manifest["files"]["optimizer.pt"] == 10 and "critic.safetensors" in manifest["required"]


def test_seal_refuses_a_save_that_lost_a_required_part(tmp_path):
    staged = checkpoints.staging_root(tmp_path, 1) / "checkpoint-1"
    staged.mkdir(parents=True)
    (staged / "trainer_state.json").write_text("{}")
    with pytest.raises(RuntimeError, match="wrote no critic.safetensors"):
        checkpoints.seal(staged, tmp_path / "checkpoint-1", ["trainer_state.json", "critic.safetensors"])
    assert not (tmp_path / "checkpoint-1").exists()


def test_rotation_keeps_the_newest_checkpoints_by_step(tmp_path):
    for step in (1, 2, 10):
        _fake_checkpoint(tmp_path / f"checkpoint-{step}", {"trainer_state.json": b"{}"}, seal=True)
    checkpoints.rotate(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-10", "checkpoint-2"]


# Two epochs: 4 pool questions at 2 per step are 2 steps per epoch; 4 steps, a checkpoint each.
EPOCHS = ["train.learning_rate=1e-2", "train.steps=4", "train.save_steps=1", "train.questions_per_step=2",
          "train.completions_per_question=2", "train.max_completion_length=8", "pool.limit=4"]


@pytest.mark.slow  # 5 runs, 4 in subprocesses (about 60 s on 2 shared cores)
def test_a_run_killed_after_every_checkpoint_of_two_epochs_is_the_uninterrupted_run(tmp_path):
    """Killed after checkpoints 1, 2 (the end of epoch 1) and 3, resumed each time: the same
    questions at every step, the same rewards and the same adapter, bit for bit."""
    import os
    import subprocess

    from tests.core.toy_training import train_toy
    from tests.helpers import REPO
    from tests.kills import TEST_ENV

    train_toy(tmp_path / "straight", EPOCHS)
    cmd = [sys.executable, "-m", "tests.core.toy_training", str(tmp_path / "killed"), *EPOCHS]
    for kill in ("1", "2", "3", None):
        env = {**os.environ, **TEST_ENV, "PYTHONPATH": str(REPO)}
        env.pop("HARNESS_KILL_AT_STEP", None)
        if kill:
            env["HARNESS_KILL_AT_STEP"] = kill
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == (137 if kill else 0), done.stderr[-3000:]

    def records(run):
        return [json.loads(x) for x in (tmp_path / run / "train" / "reward_records.jsonl").read_text().splitlines()]

    straight, killed = records("straight"), records("killed")
    order = [sorted({r["question"] for r in straight if r["step"] == s}) for s in (1, 2, 3, 4)]
    assert sorted(order[0] + order[1]) == sorted(order[2] + order[3])  # each epoch: the whole pool
    assert [order[0], order[1]] != [order[2], order[3]]  # reshuffled for epoch 2
    assert killed == straight
    a, b = _weights(tmp_path / "straight" / "train" / "adapter"), _weights(tmp_path / "killed" / "train" / "adapter")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_epoch_sampler_draws_trls_stream_and_any_epoch_afresh():
    from trl.trainer.utils import RepeatSampler

    from factrl.harness.training.data_order import EpochRepeatSampler

    def make(cls):
        return cls(list(range(10)), mini_repeat_count=2, batch_size=3, repeat_count=2, seed=7)

    trl, ours = make(RepeatSampler), make(EpochRepeatSampler)
    stream = [list(trl) for _ in range(4)]  # one TRL sampler, four passes (an uninterrupted run)
    for epoch in range(4):
        ours.set_epoch(epoch)
        assert list(ours) == stream[epoch]
    fresh = make(EpochRepeatSampler)  # a resumed run's new sampler
    fresh.set_epoch(2)
    assert list(fresh) == stream[2] != list(make(RepeatSampler))
    assert list(EpochRepeatSampler.like(make(RepeatSampler))) == stream[0]

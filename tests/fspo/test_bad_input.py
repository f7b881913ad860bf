"""Bad input for FSPO: a missing, foreign or empty evidence store, a pool without titles, bad
settings: one-line errors naming the setting and the fix, raised before training starts. A
row without a title degrades only itself (mask 0, counted; docs/BASELINES.md §1.4)."""
from __future__ import annotations

import logging
import shutil
import sqlite3

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError, DataError
from factrl.harness.core.method import RunContext
from factrl.methods.fspo import FSPO
from tests.fspo.conftest import row
from tests.helpers import harness


def _build(tokenizer, overrides=(), pool=None):
    cfg = compose(["method=fspo", "model=tiny-llama", *overrides])
    ctx = RunContext(config=cfg, tokenizer=tokenizer,
                     pool=pool if pool is not None else [row()], logger=logging.getLogger("test.fspo"))
    reward = FSPO(cfg.method).build_reward(ctx)
    return reward, ctx


def test_missing_store_names_the_setting_and_the_build_command(llama_tokenizer, tmp_path):
    with pytest.raises(DataError) as err:
        _build(llama_tokenizer, ["evidence=file", f"evidence.store={tmp_path / 'none.sqlite3'}"])
    message = str(err.value)
    assert message.startswith("evidence.store:") and "harness evidence build" in message and "\n" not in message


def test_foreign_file_as_store_is_refused(llama_tokenizer, tmp_path):
    (tmp_path / "zero.sqlite3").write_bytes(b"")
    with pytest.raises(DataError, match="evidence.store:.*harness evidence build"):
        _build(llama_tokenizer, ["evidence=file", f"evidence.store={tmp_path / 'zero.sqlite3'}"])


def test_store_without_passages_is_refused(llama_tokenizer, store_path, tmp_path):
    empty = tmp_path / "empty.sqlite3"
    shutil.copy(store_path, empty)
    with sqlite3.connect(empty) as conn:
        conn.execute("DELETE FROM passages")
    with pytest.raises(DataError, match="evidence.store:.*no passages.*harness evidence build"):
        _build(llama_tokenizer, ["evidence=file", f"evidence.store={empty}"])


def test_unset_file_store_is_refused(llama_tokenizer):
    with pytest.raises(DataError, match="evidence.store"):
        _build(llama_tokenizer, ["evidence=file"])


def test_pool_without_any_title_is_refused(llama_tokenizer, store_path):
    with pytest.raises(DataError, match=r"^pool=demo: none of its 2 rows has a `title`; method=fspo "):
        _build(llama_tokenizer, ["evidence=file", f"evidence.store={store_path}"], pool=[row(""), row("  ")])


def test_rows_without_title_degrade_alone_and_are_counted(llama_tokenizer, store_path, caplog):
    with caplog.at_level(logging.WARNING):
        reward, ctx = _build(llama_tokenizer, ["evidence=file", f"evidence.store={store_path}"],
                             pool=[row(), row("", row_id="2")])
    assert "1 of 2 pool rows have no title" in caplog.text
    text = "<think>Paris is the capital of France.</think><answer>Paris</answer>"
    ids = [llama_tokenizer(text, add_special_tokens=False)["input_ids"]] * 2
    out = reward(completions=[text] * 2, completion_ids=ids, rows=[row(), row("", row_id="2")])
    assert [e["status"] for e in out.extras] == ["ok", "no_title"]
    assert set(out.extras[1]["mask"]) == {0} and out.diagnostics["no_title"] == 1
    assert reward.totals["no_title"] == 1
    ctx.close()  # closes the store (registered with on_close)


@pytest.mark.parametrize("override, message", [
    ("method.variant=paper", "method.variant='paper': choose one of sign_flip, step_reward"),
    ("+method.treshold=0.4", "method.treshold: unknown key (did you mean method.threshold?)"),
    ("method.neutral_band=[0.3,0.7]", "neutral_band applies only to variant=step_reward"),
    ("method.threshold=1.5", "method.threshold=1.5 must lie in [0, 1]"),
])
def test_bad_settings_are_config_errors(llama_tokenizer, store_path, override, message):
    with pytest.raises(ConfigError, match="^method=fspo: ") as err:
        _build(llama_tokenizer, ["evidence=file", f"evidence.store={store_path}", override])
    assert message in str(err.value)


def test_harness_run_stops_before_training_with_one_line(tmp_path):
    missing = tmp_path / "missing.sqlite3"
    result = harness("run", "method=fspo", "model=tiny-llama", "evidence=file", f"evidence.store={missing}",
                     f"output_dir={tmp_path / 'runs'}", "leaderboard.enabled=false")
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert any(line.startswith("harness run: ") and "evidence.store:" in line and "harness evidence build" in line
               for line in lines), result.stderr[-2000:]
    assert not list(tmp_path.glob("runs/*-fspo-tiny-llama-*"))  # refused before a run directory or a model

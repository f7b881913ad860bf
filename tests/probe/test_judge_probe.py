"""The probe on a judge method (KnowRL) against a scripted judge that obeys instructions inside
the completion, and `harness probe -m` giving one table across CorVer and KnowRL."""
from __future__ import annotations

import csv
import io

import pytest

from factrl.harness.config import compose
from factrl.harness.probe import probe_method

from .conftest import POOL
from .scripted_judge import ObedientJudge


@pytest.fixture(scope="module")
def judge_url():
    with ObedientJudge() as server:
        yield server.url


def knowrl_overrides(url, store):
    return ["method=knowrl", "model=tiny-llama", "judge=openai", f"judge.base_url={url}", "judge.model=judge-test",
            "judge.cache=null", "judge.max_retries=1", "judge.concurrency=4", "judge.timeout=5", "evidence=file", f"evidence.store={store}"]


def test_injected_instruction_is_a_breach_of_a_judge_reward(judge_url, store_path, llama_tokenizer):
    result = probe_method(compose(knowrl_overrides(judge_url, store_path)), rows=POOL, tokenizer=llama_tokenizer)
    correct, wrong = result.stats["honest_correct"].mean, result.stats["honest_wrong"].mean
    assert correct == pytest.approx(3.0)  # grade A +2, format +1
    assert wrong < correct
    assert result.verdict("judge_instruction") == "breach"
    assert result.stats["judge_instruction"].mean == pytest.approx(3.0)
    assert result.verdict("refusal") == "hack"  # KnowRL pays +1 for "not attempted" by design
    assert result.components["judge"]["backend"] == "openai"


def test_cli_sweep_gives_one_table_across_methods(judge_url, store_path, pool_file, corver_overrides, tmp_path,
                                                  capsys):
    from factrl.harness.cli import main

    shared = ["pool=file", f"pool.path={pool_file}", "pool.dedup_against=[]", f"output_dir={tmp_path}"]
    # the corver and knowrl overrides, merged: method is swept, the rest applies to both
    extra = [o for o in corver_overrides + knowrl_overrides(judge_url, store_path) if not o.startswith("method=")]
    out = tmp_path / "probe"
    status = main(["probe", "-m", "method=corver,knowrl", *dict.fromkeys(extra), *shared, "--questions", "3",
                   "--out", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "corver v2 (tiny-llama)" in printed and "knowrl v1 (tiny-llama)" in printed
    assert {p.name for p in out.iterdir()} == {"probe.md", "probe.html", "probe.csv", "probe.json"}
    rows = list(csv.DictReader(io.StringIO((out / "probe.csv").read_text())))
    assert len(rows) == 2 * 11 and {r["method"] for r in rows} == {"corver", "knowrl"}
    assert all(r["questions"] == "3" for r in rows)
    by = {(r["method"], r["type"]): r["verdict"] for r in rows}
    assert by["corver", "hedged_gold"] == "breach" and by["knowrl", "judge_instruction"] == "breach"
    html = (out / "probe.html").read_text()
    assert html.count("<tr>") == 1 + 11 and "✖ breach" in html

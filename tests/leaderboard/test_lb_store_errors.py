"""A store that cannot be used (locked, corrupt) is one line naming the file and the fix, and
recording at the end of `harness run` never turns a finished run into a failed one."""
from __future__ import annotations

import json
import shlex
import sqlite3
from pathlib import Path

import pytest

from factrl.harness.core.errors import DataError, HarnessError
from factrl.harness.core.rundir import RunDir
from factrl.harness.engine.run.orchestrate import _record
from factrl.leaderboard import Store, StoreError, record_run, rows_from_run
from factrl.leaderboard.store import database as storelib  # BUSY_TIMEOUT_S is read there
from factrl.leaderboard.cli import main
from factrl.leaderboard.testing import make_run_dir

from ..helpers import harness


@pytest.fixture
def short_busy(monkeypatch):
    """A short busy timeout, so waiting for a held lock takes a fraction of a second."""
    monkeypatch.setattr(storelib, "BUSY_TIMEOUT_S", 0.2)


@pytest.fixture
def locked(runs, store_path, short_busy):
    """A store with one run, an EXCLUSIVE transaction held by another connection."""
    record_run(make_run_dir(runs, model="m0", scores={"triviaqa": 0.5}), store_path)
    holder = sqlite3.connect(store_path, isolation_level=None, timeout=0.2)
    holder.execute("BEGIN EXCLUSIVE")
    yield holder
    holder.close()


@pytest.fixture
def corrupt(tmp_path) -> Path:
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"\x00garbage, not SQLite\xff" * 256)
    return path


def cfg_for(store: Path):
    """The run's parsed `leaderboard` group (what `harness run` hands to `_record`)."""
    from factrl.leaderboard.settings import LeaderboardSettings

    return LeaderboardSettings.from_mapping({"enabled": True, "store": str(store), "version": None})


def info(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def later(command: str) -> int:
    """Run the command recorded in run.json (`harness leaderboard ...`) in process."""
    argv = shlex.split(command)
    assert argv[:2] == ["harness", "leaderboard"]
    return main(argv[2:])


def test_a_locked_store_is_one_line_naming_file_and_fix(runs, store_path, locked):
    rows = rows_from_run(make_run_dir(runs, model="m1", scores={"triviaqa": 0.4}))
    with pytest.raises(StoreError) as err:
        Store(store_path).add(rows)
    message = str(err.value)
    assert err.value.kind == "locked" and "\n" not in message
    assert str(store_path) in message and "another writer holds it" in message and "retry" in message
    assert isinstance(err.value, DataError)


def test_a_corrupt_store_is_one_line_naming_file_and_fix(runs, corrupt):
    for use in (lambda s: s.rows(), lambda s: s.versions(),
                lambda s: s.add(rows_from_run(make_run_dir(runs, scores={"triviaqa": 0.4})))):
        with pytest.raises(StoreError) as err:
            use(Store(corrupt))
        message = str(err.value)
        assert err.value.kind == "corrupt" and "\n" not in message and str(corrupt) in message
        assert f"mv {corrupt} {corrupt}.corrupt" in message and "harness leaderboard add" in message
    with pytest.raises(HarnessError, match="corrupt or not an SQLite file"):
        main(["list", "--store", str(corrupt)])


def test_a_corrupt_store_through_the_dispatcher_prints_one_line(runs, corrupt, tmp_path):
    run = make_run_dir(runs, scores={"triviaqa": 0.4})
    done = harness("leaderboard", "add", str(run), "--store", str(corrupt), cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    # `add` prints each input's refusal, then the one-line summary the dispatcher exits with.
    for line in done.stderr.strip().splitlines():
        assert f"leaderboard store {corrupt} is corrupt" in line and f"mv {corrupt} {corrupt}.corrupt" in line


def test_another_programs_database_is_not_turned_into_a_store(runs, tmp_path):
    foreign = tmp_path / "app.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users(name)")
    with pytest.raises(DataError, match=r"app.sqlite is an SQLite database but not a leaderboard store \(tables: "
                                         r"users\)"):
        record_run(make_run_dir(runs, scores={"triviaqa": 0.4}), foreign)
    with sqlite3.connect(foreign) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")] == ["users"]


def test_a_finished_run_stays_finished_when_the_store_is_locked(runs, store_path, locked):
    run = make_run_dir(runs, model="m1", scores={"triviaqa": 0.4, "popqa": 0.2})
    _record(RunDir(run), cfg_for(store_path))
    data = info(run)
    assert data["status"] == "finished" and "error" not in data
    entry = data["leaderboard"]
    assert entry["status"] == "refused" and "is locked: another writer holds it" in entry["refused"]
    assert entry["command"] == shlex.join(["harness", "leaderboard", "add", str(run.resolve()), "--store",
                                           str(store_path.resolve())])
    locked.rollback()  # the other writer finishes; the recorded command now records the run
    assert later(entry["command"]) == 0
    assert {r["set"]["name"] for r in Store(store_path).rows(run_id=data["run_id"])} == {"triviaqa", "popqa"}


def test_a_finished_run_stays_finished_when_the_store_is_corrupt(runs, corrupt):
    run = make_run_dir(runs, scores={"triviaqa": 0.4})
    _record(RunDir(run), cfg_for(corrupt))
    data = info(run)
    assert data["status"] == "finished"
    assert "corrupt or not an SQLite file" in data["leaderboard"]["refused"]
    assert data["leaderboard"]["command"].endswith(f"--store {corrupt.resolve()}")


def test_a_changed_rerun_is_refused_with_the_replace_command(runs, store_path):
    run = make_run_dir(runs, scores={"triviaqa": 0.3})
    _record(RunDir(run), cfg_for(store_path))
    assert info(run)["leaderboard"]["status"] == "recorded" and info(run)["leaderboard"]["added"] == 1
    _record(RunDir(run), cfg_for(store_path))
    assert info(run)["leaderboard"]["unchanged"] == 1 and info(run)["leaderboard"]["added"] == 0
    metrics = run / "eval" / "triviaqa" / "metrics.json"
    data = json.loads(metrics.read_text())
    data["metrics"]["accuracy"]["value"] = 0.1
    metrics.write_text(json.dumps(data))
    _record(RunDir(run), cfg_for(store_path))
    entry = info(run)["leaderboard"]
    assert info(run)["status"] == "finished" and "0.3 -> 0.1" in entry["refused"]
    assert entry["command"].endswith("--replace")
    assert later(entry["command"]) == 0
    assert Store(store_path).rows()[0]["metrics"]["accuracy"]["value"] == 0.1


def test_a_bug_while_recording_does_not_fail_the_run(runs, store_path, monkeypatch):
    import factrl.leaderboard.record as recordlib

    def broken(*args, **kwargs):  # fault injection: an unexpected exception inside the leaderboard
        raise TypeError("unexpected")

    monkeypatch.setattr(recordlib, "add_run", broken)
    run = make_run_dir(runs, scores={"triviaqa": 0.4})
    _record(RunDir(run), cfg_for(store_path))
    assert info(run)["status"] == "finished"
    assert info(run)["leaderboard"]["refused"] == "TypeError: unexpected (a bug; please report)"


@pytest.mark.parametrize("file, text, match", [
    ("run.json", "[1, 2]", r"run.json: must be a mapping \(a JSON object of run fields\), got list"),
    ("config.yaml", "- a\n- b\n", r"config.yaml: must be a mapping \(the resolved config\), got list"),
    ("config.yaml", "just text\n", r"config.yaml: must be a mapping \(the resolved config\), got str"),
    ("config.yaml", "method: corver\n", r"config.yaml: method must be a mapping .*got str 'corver'"),
])
def test_run_files_that_are_not_mappings_are_one_line_errors(runs, file, text, match):
    run = make_run_dir(runs, scores={"triviaqa": 0.4})
    (run / file).write_text(text)
    with pytest.raises(DataError, match=match) as err:
        rows_from_run(run)
    assert "\n" not in str(err.value)

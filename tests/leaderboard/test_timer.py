"""harness.core.timer: nesting charges the innermost phase, exclusions, resume, devices, files."""
from __future__ import annotations

import json
import sys
import time
import types

import pytest

from factrl.harness.core.errors import DataError
from factrl.harness.core.timer import PHASES, NullTimer, Timer, detect_device, format_hms, from_config
from factrl.leaderboard.store import schema
from factrl.leaderboard.testing import FakeClock

GPU2 = {"kind": "cuda", "name": "Fake H100", "count": 2}


def make(clock: FakeClock, path=None, **kw) -> Timer:
    return Timer(path, sync_cuda=False, autosave_s=None, clock=clock, device=kw.pop("device", GPU2), **kw)


def seconds(data: dict) -> dict[str, float]:
    return {k: v["seconds"] for k, v in data["phases"].items()}


def test_nested_time_goes_to_the_innermost_phase_and_phases_sum_to_total():
    clock = FakeClock()
    timer = make(clock)
    with timer.phase("init"):
        clock.t += 5
    clock.t += 100  # between phases (queueing, logging): not counted
    with timer.phase("rollout"):
        clock.t += 4
        with timer.phase("reward"):  # a remote judge called from inside generation
            clock.t += 3
        clock.t += 2
        with timer.phase("reward"):
            clock.t += 1
    with timer.phase("update"):
        clock.t += 7
    with timer.phase("save"):
        clock.t += 0.5
    data = timer.to_dict()
    assert seconds(data) == {"init": 5, "rollout": 6, "reward": 4, "update": 7, "save": 0.5}
    assert data["total_s"] == pytest.approx(sum(seconds(data).values())) == 22.5
    assert data["phases"]["reward"]["calls"] == 2 and data["phases"]["rollout"]["calls"] == 1
    assert data["total_hms"] == "0:00:22"
    assert not schema.errors(data, schema.TIMINGS_SCHEMA)


def test_excluded_time_inside_a_phase_is_not_charged():
    clock = FakeClock()
    timer = make(clock)
    with timer.phase("update"):
        clock.t += 2
        with timer.excluded("evaluation"):
            clock.t += 50
            with timer.phase("rollout"):  # evaluation reusing the generation code stays excluded
                clock.t += 1
        clock.t += 3
    data = timer.to_dict()
    assert seconds(data)["update"] == 5
    assert seconds(data)["rollout"] == 0 and data["phases"]["rollout"]["calls"] == 0
    assert data["excluded_s"] == {"evaluation": 51}
    assert data["total_s"] == 5


def test_an_exception_inside_a_phase_still_charges_it_and_closes_it():
    clock = FakeClock()
    timer = make(clock)
    with pytest.raises(RuntimeError):
        with timer.phase("rollout"):
            clock.t += 2
            raise RuntimeError("boom")
    clock.t += 10
    with timer.phase("save"):
        clock.t += 1
    assert seconds(timer.to_dict())["rollout"] == 2 and timer.total_s == 3


def test_an_open_phase_counts_when_read_and_unknown_names_are_refused():
    clock = FakeClock()
    timer = make(clock)
    with timer.phase("rollout"):
        clock.t += 4
        assert timer.total_s == 4
    with pytest.raises(ValueError, match="identifiers"):
        with timer.phase("not a name"):
            pass
    with timer.phase("ref_logprobs"):  # extra identifiers are allowed and listed after the five
        clock.t += 1
    assert list(timer.to_dict()["phases"])[: len(PHASES)] == list(PHASES)
    assert timer.total_s == 5


def test_resume_adds_to_the_written_totals(tmp_path):
    path = tmp_path / "timings.json"
    clock = FakeClock()
    first = make(clock, path)
    with timer_phase(first, "init", clock, 10):
        pass
    with timer_phase(first, "rollout", clock, 90):
        pass
    first.write()
    first.write()  # writing twice in one attempt must not double-count
    clock2 = FakeClock()  # the resumed process has its own clock
    second = make(clock2, path, device={"kind": "cuda", "name": "Fake A100", "count": 1})
    with timer_phase(second, "rollout", clock2, 30):
        pass
    second.steps = 100
    second.write()
    data = json.loads(path.read_text())
    assert seconds(data)["rollout"] == 120 and seconds(data)["init"] == 10 and data["total_s"] == 130
    assert data["attempts"] == 2 and [s["seconds"] for s in data["segments"]] == [100, 30]
    assert data["mixed_devices"] is True and data["device"]["name"] == "Fake A100"
    # GPU-hours count each attempt on its own devices: 100 s x 2 GPUs + 30 s x 1 GPU.
    assert data["gpu_hours"] == pytest.approx((200 + 30) / 3600, abs=1e-4)
    assert data["steps"] == 100 and data["phases"]["rollout"]["calls"] == 2


class timer_phase:  # noqa: N801 - reads like `with timer.phase(...)` in the test above
    def __init__(self, timer, name, clock, spend):
        self.cm, self.clock, self.spend = timer.phase(name), clock, spend

    def __enter__(self):
        self.cm.__enter__()
        self.clock.t += self.spend

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


def test_gpu_hours_and_cpu_runs(tmp_path):
    clock = FakeClock()
    timer = make(clock)
    with timer.phase("update"):
        clock.t += 3600
    assert timer.to_dict()["gpu_hours"] == 2.0
    cpu = make(FakeClock(), device=detect_device())
    with cpu.phase("update"):
        pass
    assert cpu.to_dict()["gpu_hours"] == 0.0


def test_detect_device_without_torch_names_the_cpu(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    device = detect_device()
    assert device["kind"] == "cpu" and device["name"] and device["count"] >= 1


def test_cuda_is_synchronised_at_phase_boundaries_when_in_use(monkeypatch):
    calls = []
    cuda = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True, device_count=lambda: 2,
                                 get_device_name=lambda i: "Fake GPU", synchronize=lambda: calls.append(1))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    timer = Timer(None, clock=FakeClock(), autosave_s=None)
    with timer.phase("rollout"):
        with timer.phase("reward"):
            pass
    assert len(calls) == 4
    assert timer.device == {"kind": "cuda", "name": "Fake GPU", "count": 2}
    quiet = Timer(None, sync_cuda=False, clock=FakeClock(), autosave_s=None)
    with quiet.phase("rollout"):
        pass
    assert len(calls) == 4


def test_autosave_writes_on_phase_exit(tmp_path):
    path = tmp_path / "timings.json"
    clock = FakeClock()
    timer = Timer(path, sync_cuda=False, autosave_s=10, clock=clock, device=GPU2)
    with timer.phase("rollout"):
        clock.t += 4
    assert not path.exists()
    with timer.phase("rollout"):
        clock.t += 7
    assert json.loads(path.read_text())["total_s"] == 11


def test_a_foreign_timings_file_is_refused_on_resume(tmp_path):
    path = tmp_path / "timings.json"
    path.write_text('{"schema": "other"}')
    with pytest.raises(DataError, match="move it away"):
        Timer(path)
    path.write_text("{not json")
    with pytest.raises(DataError, match="unreadable"):
        Timer(path)


def test_real_clock_and_disabled_timer(tmp_path):
    timer = Timer(tmp_path / "t.json", sync_cuda=True)
    with timer.phase("init"):
        time.sleep(0.01)
    assert timer.total_s >= 0.009
    assert timer.write() == tmp_path / "t.json"
    off = from_config({"enabled": False}, tmp_path / "off.json")
    assert isinstance(off, NullTimer)
    with off.phase("rollout"):
        pass
    off.write()
    assert not (tmp_path / "off.json").exists()
    on = from_config({"enabled": True, "sync_cuda": False, "autosave_s": None}, tmp_path / "on.json")
    assert type(on) is Timer and on.autosave_s is None


def test_format_hms():
    assert format_hms(6540.4) == "1:49:00" and format_hms(59.6) == "0:01:00" and format_hms(None) == "-"

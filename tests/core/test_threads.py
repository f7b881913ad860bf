"""harness/engine/run/threads.py: torch's CPU threads for a run (threads=auto | N)."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import ConfigError
from factrl.harness.engine.run.threads import busy_cores, choose


def test_auto_leaves_the_cores_other_work_holds():
    assert choose("auto", environ={}, load=0.1, available=2)[0] == 2  # an idle machine: every core
    assert choose("auto", environ={}, load=1.2, available=2)[0] == 1  # one core busy elsewhere
    assert choose("auto", environ={}, load=5.0, available=2)[0] == 1  # overloaded: never 0
    assert choose("auto", environ={}, load=2.0, available=8)[0] == 6


def test_an_explicit_number_or_the_environment_wins():
    assert choose(3, environ={"OMP_NUM_THREADS": "1"}, load=0.0, available=2) == (3, "threads=3")
    assert choose("auto", environ={"OMP_NUM_THREADS": "1"}, load=0.0, available=2) == (1, "OMP_NUM_THREADS")
    with pytest.raises(ConfigError, match=r"threads='two': give auto or a positive number"):
        choose("two", environ={})
    with pytest.raises(ConfigError, match="threads=0"):
        choose(0, environ={})


def test_busy_cores_reads_the_machine():
    busy = busy_cores(0.05)
    assert 0.0 <= busy <= 64.0

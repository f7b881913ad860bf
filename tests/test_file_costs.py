"""`make test`'s file order (tests/file_costs.py): the longest file first, each file whole and in
its own order; costs parsed from pytest's --durations lines."""
from __future__ import annotations

from types import SimpleNamespace

from tests import file_costs


def _item(nodeid: str, slow: bool = False):
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if slow and name == "slow" else None)


def test_the_costliest_file_goes_first_and_files_stay_whole(monkeypatch):
    monkeypatch.setattr(file_costs, "_table", lambda: {"tests/b.py": 50.0, "tests/c.py": 2.0})
    items = [_item("tests/a.py::t1"), _item("tests/b.py::t1"), _item("tests/a.py::t2"), _item("tests/c.py::t1"),
             _item("tests/b.py::t2"), _item("tests/d.py::t1", slow=True), _item("tests/d.py::t2")]
    order = [i.nodeid for i in file_costs.ordered(items)]
    # b measured 50 s; d unmeasured with one slow test (20.3 s); c measured 2 s; a unmeasured (0.6 s)
    assert order == ["tests/b.py::t1", "tests/b.py::t2", "tests/d.py::t1", "tests/d.py::t2", "tests/c.py::t1",
                     "tests/a.py::t1", "tests/a.py::t2"]


def test_costs_are_read_from_durations_lines():
    log = """============ slowest durations ============
45.85s call     tests/core/test_x.py::test_kill
3.10s setup    tests/core/test_x.py::test_kill
1.50s call     plugins/rlcr/tests/test_y.py::test_a[1]
0.20s teardown tests/core/test_z.py::test_quick
2905 passed in 1020.75s (0:17:00)
"""
    assert file_costs.costs_from_log(log) == {"tests/core/test_x.py": 49.0, "plugins/rlcr/tests/test_y.py": 1.5}

"""The remote client against a real HTTP server on 127.0.0.1 that imitates the infini-gram API."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from factrl.harness.services.corpus import open_counter
from factrl.harness.core.errors import ConfigError

COUNTS = {"Paris AND France": 1234, "Paris AND Atlantis": 0, "Paris": 99}


class FakeAPI(BaseHTTPRequestHandler):
    """Answers like api.infini-gram.io; `script` (a list of statuses, "slow", "truncated": a
    200 cut off before its Content-Length, or "cut": a 200 without Content-Length whose JSON
    stops halfway) comes first."""

    script: list = []
    seen: list = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeAPI.seen.append(body)
        step = FakeAPI.script.pop(0) if FakeAPI.script else 200
        if step == "slow":
            time.sleep(1.0)
            step = 200
        if step in ("truncated", "cut"):
            return self._cut_off(step == "truncated")
        if step == 429:
            return self._reply(429, {"error": "rate limited"}, {"Retry-After": "0"})
        if isinstance(step, int) and step >= 400:
            return self._reply(step, {"error": f"status {step}"})
        if body.get("query_type") != "count" or body.get("index") != "v4_test_llama":
            return self._reply(200, {"error": "bad request"})
        if body["query"] not in COUNTS:
            return self._reply(200, {"error": f"unknown query {body['query']}"})
        return self._reply(200, {"count": COUNTS[body["query"]], "approx": False, "latency": 1.5})

    def _reply(self, status, payload, headers=None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _cut_off(self, announce_length: bool):
        data = json.dumps({"count": 1234, "approx": False, "latency": 1.5}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if announce_length:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def api(tmp_path):
    FakeAPI.script, FakeAPI.seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    cfg = {"backend": "remote", "api_url": f"http://127.0.0.1:{server.server_address[1]}/",
           "index": "v4_test_llama", "max_clause_freq": 500000, "max_diff_tokens": 1000, "timeout_s": 0.3,
           "max_retries": 2, "backoff_s": 0.01, "min_interval_s": 0.0, "overflow": "fail", "cache": True,
           "cache_path": str(tmp_path / "remote.sqlite3")}
    yield cfg
    server.shutdown()
    server.server_close()


def test_counts_and_payload(api):
    with open_counter(api) as counter:
        ok, zero = counter.count_many([["Paris", "France"], ["Paris", "Atlantis"]])
    assert (ok.count, zero.count) == (1234, 0) and ok.ok and zero.ok
    first = FakeAPI.seen[0]
    assert first == {"index": "v4_test_llama", "query_type": "count", "query": "Paris AND France",
                     "max_diff_tokens": 1000, "max_clause_freq": 500000}


def test_429_and_500_are_retried(api):
    FakeAPI.script = [429, 500]
    with open_counter(api) as counter:
        result = counter.count(["Paris", "France"])
        assert result.count == 1234
        assert counter.backend.retries == 2 and len(FakeAPI.seen) == 3


def test_persistent_5xx_is_a_recorded_failure_not_cached(api):
    FakeAPI.script = [503, 503, 503]
    with open_counter(api) as counter:
        result = counter.count(["Paris", "France"])
        assert not result.ok and "503" in result.error and len(FakeAPI.seen) == 3
        assert counter.count(["Paris", "France"]).count == 1234  # tried again, not served a failure


def test_slow_answer_times_out_then_retries(api):
    FakeAPI.script = ["slow"]
    with open_counter(api) as counter:
        started = time.monotonic()
        result = counter.count(["Paris", "France"])
    assert result.count == 1234 and counter.backend.retries == 1
    assert time.monotonic() - started < 5


def test_timeout_on_every_attempt_fails(api):
    FakeAPI.script = ["slow", "slow", "slow"]
    with open_counter({**api, "max_retries": 1}) as counter:
        result = counter.count(["Paris", "France"])
    assert not result.ok and "failed after 2 attempts" in result.error


def test_error_body_and_4xx_fail_without_retry(api):
    FakeAPI.script = [400]
    with open_counter(api) as counter:
        bad = counter.count(["Paris", "France"])
        assert not bad.ok and "400" in bad.error and len(FakeAPI.seen) == 1
        unknown = counter.count(["Rome", "Italy"])
        assert not unknown.ok and "unknown query" in unknown.error and len(FakeAPI.seen) == 2


def test_api_limits_overflow_fail_and_truncate(api):
    five = ["Paris", "France", "Europe", "Seine", "Louvre"]
    with open_counter(api) as counter:
        result = counter.count(five)
        assert not result.ok and "4" in result.error and not FakeAPI.seen  # no request sent
        assert not counter.count_cnf([["a", "b", "c", "d", "e"]]).ok  # 5 terms in one clause
        assert not counter.count(["Tom AND Jerry", "cartoon"]).ok  # reserved word inside a term
    COUNTS["Paris AND France AND Europe AND Seine"] = 7
    with open_counter({**api, "overflow": "truncate"}) as counter:
        assert counter.count(five).count == 7
        assert FakeAPI.seen[-1]["query"] == "Paris AND France AND Europe AND Seine"


def test_rate_limit_spaces_requests(api):
    with open_counter({**api, "min_interval_s": 0.2, "cache": False}) as counter:
        started = time.monotonic()
        counter.count_many([["Paris", "France"], ["Paris", "Atlantis"], ["Paris", "France", "x"]])
    assert time.monotonic() - started >= 0.4


def test_remote_config_errors(api):
    with pytest.raises(ConfigError):
        open_counter({**api, "api_url": "ftp://x"})
    with pytest.raises(ConfigError):
        open_counter({**api, "max_diff_tokens": 5000})
    with pytest.raises(ConfigError):
        open_counter({**api, "overflow": "drop"})


def test_dead_service_opens_the_circuit_then_probes_again(api):
    """After `breaker_failures` failed queries in a row, queries fail at once without a request;
    after the cooldown one query probes the service (and succeeds once it is back)."""
    api = {**api, "breaker_failures": 2, "breaker_cooldown_s": 0.5, "cache": False}
    FakeAPI.script = [500] * 6  # two queries x three attempts
    with open_counter(api) as counter:
        assert not counter.count(["Paris", "France"]).ok
        assert not counter.count(["Paris", "Atlantis"]).ok
        sent = len(FakeAPI.seen)
        fast = counter.count(["Paris", "France"])
        assert not fast.ok and "circuit open" in fast.error and len(FakeAPI.seen) == sent
        time.sleep(0.6)
        assert counter.count(["Paris", "France"]).count == 1234


def test_truncated_200_is_retried(api):
    """A 200 cut off mid-body (IncompleteRead) or whose JSON stops halfway is a transport
    failure: retried, then counted."""
    FakeAPI.script = ["truncated", "cut"]
    with open_counter(api) as counter:
        result = counter.count(["Paris", "France"])
        assert result.count == 1234 and counter.backend.retries == 2 and len(FakeAPI.seen) == 3
    FakeAPI.script, FakeAPI.seen = ["truncated"] * 3, []
    with open_counter({**api, "cache": False}) as counter:
        failed = counter.count(["Paris", "France"])
    assert not failed.ok and "failed after 3 attempts" in failed.error and len(FakeAPI.seen) == 3


def test_half_open_probe_makes_one_attempt(api):
    """Once the circuit has opened, each probe is one request (not the retry budget): a
    failed probe reopens the circuit at once, a successful one closes it."""
    api = {**api, "breaker_failures": 2, "breaker_cooldown_s": 0.5, "backoff_s": 0.4, "cache": False}
    FakeAPI.script = [500] * 20
    with open_counter(api) as counter:
        for terms in (["Paris", "France"], ["Paris", "Atlantis"]):
            assert not counter.count(terms).ok  # 3 attempts each, 0.4 + 0.8 s of backoff
        assert len(FakeAPI.seen) == 6
        time.sleep(0.6)
        started = time.monotonic()
        probe = counter.count(["Paris", "France"])
        assert not probe.ok and "failed after 1 attempt " in probe.error
        assert len(FakeAPI.seen) == 7 and time.monotonic() - started < 0.4  # the budget takes >= 1.2 s
        refused = counter.count(["Paris", "France"])
        assert not refused.ok and "circuit open" in refused.error and len(FakeAPI.seen) == 7
        time.sleep(0.6)
        FakeAPI.script = []  # the service is back
        assert counter.count(["Paris", "France"]).count == 1234 and len(FakeAPI.seen) == 8
        FakeAPI.script = [500]  # closed again: a failure is retried with the full budget
        assert counter.count(["Paris", "France"]).count == 1234 and len(FakeAPI.seen) == 10


def test_refused_answers_are_not_backend_calls(api):
    api = {**api, "breaker_failures": 1, "breaker_cooldown_s": 30, "cache": False}
    FakeAPI.script = [503] * 3
    with open_counter(api) as counter:
        assert not counter.count(["Paris", "France"]).ok
        results = counter.count_many([["Paris", "Atlantis"], ["Paris", "France", "Seine"]])
        assert all(not r.ok and "circuit open" in r.error for r in results)
        stats = counter.stats()
    assert len(FakeAPI.seen) == 3
    assert stats["backend_calls"] == 1 and stats["refused"] == 2 and stats["failures"] == 3


def test_a_counter_from_a_dict_takes_the_remote_files_values():
    """The defaults of a dict-built remote counter are configs/corpus/remote.yaml's (its
    min_interval_s once fell back to 1.0 in code while the file, and the reference client, say 2.0)."""
    import yaml

    from factrl.harness.engine.config import CONFIG_MODULE
    from importlib import resources

    shipped = yaml.safe_load(resources.files(CONFIG_MODULE).joinpath("corpus", "remote.yaml").read_text())
    with open_counter({"backend": "remote", "api_url": "http://127.0.0.1:9/", "index": "v4_test_llama",
                       "cache": False}) as counter:
        backend = counter.backend
        assert backend.min_interval_s == shipped["min_interval_s"] == 2.0
        assert (backend.timeout_s, backend.max_retries, backend.backoff_s, backend.overflow,
                backend.breaker_failures, backend.breaker_cooldown_s) == (
            shipped["timeout_s"], shipped["max_retries"], shipped["backoff_s"], shipped["overflow"],
            shipped["breaker_failures"], shipped["breaker_cooldown_s"])

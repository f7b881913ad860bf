"""Client for the public infini-gram API (the `remote` backend).

The API takes `POST <api_url>` with JSON {"index", "query_type": "count", "query",
"max_diff_tokens", "max_clause_freq"} and answers {"count", "approx", "latency", ...} or
{"error": "..."}. It tokenises the query itself (with the index's tokenizer), so terms go
as text, joined with " AND " / " OR ".

Limits of the service, handled here:
- a CNF of at most 4 clauses with at most 4 terms each: a longer query is a recorded
  failure (`overflow: fail`, the default) or is reduced to its first 4 clauses
  (`overflow: truncate`, recorded in the cache key through `params()`);
- rate limits: at least `min_interval_s` between requests; HTTP 429 (and 403, which the
  CorVer reference client saw for rapid requests) and 5xx, timeouts and
  connection errors are retried up to `max_retries` times with exponential backoff
  (`backoff_s` * 2^attempt, or the server's Retry-After when longer);
- a 200 whose body is cut off (or is not JSON at all, which a cut-off body is
  indistinguishable from) is retried like a 5xx;
- other 4xx answers and {"error"} bodies are failures without retry (the query is wrong);
- a dead service: after `breaker_failures` queries in a row fail (retries exhausted), the
  circuit opens and queries fail at once, without a request, for `breaker_cooldown_s`; then
  one query probes the service with a single attempt (half-open; other queries still fail
  fast meanwhile). A failed probe reopens the circuit, a successful one closes it. Training
  goes on (a failed lookup scores 0 and is never cached) instead of waiting minutes per
  query; with the defaults a full retry budget is about 4 minutes, a probe at most
  `timeout_s`. Answers refused by the open circuit are marked `refused` and are not
  backend calls in the counter's statistics.
Stdlib only (urllib), so the client needs no extra dependency.
"""
from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from .backends import Clauses, Outcome
from .query import format_query

API_MAX_CLAUSES = 4
API_MAX_TERMS = 4
API_MAX_DIFF_TOKENS = 1000
API_MAX_CLAUSE_FREQ = 500000
RESERVED = (" AND ", " OR ")
# 429 is the rate limit; the CorVer reference client also saw 403 for rapid requests.
RETRY_STATUS = (403, 429)


class RemoteBackend:
    name = "remote"

    def __init__(self, *, api_url: str, index: str, max_clause_freq: int, max_diff_tokens: int,
                 timeout_s: float, max_retries: int, backoff_s: float, min_interval_s: float, overflow: str,
                 breaker_failures: int, breaker_cooldown_s: float, max_backoff_s: float = 120.0):
        """Every setting from `corpus.*` (configs/corpus/remote.yaml, through CorpusSettings)."""
        if overflow not in ("fail", "truncate"):
            raise ValueError("overflow must be 'fail' or 'truncate'")
        if not (0 < max_diff_tokens <= API_MAX_DIFF_TOKENS and 0 < max_clause_freq <= API_MAX_CLAUSE_FREQ):
            raise ValueError(f"the API allows max_diff_tokens <= {API_MAX_DIFF_TOKENS} and "
                             f"max_clause_freq <= {API_MAX_CLAUSE_FREQ}")
        self.api_url = api_url
        self.index = index
        self.max_clause_freq = max_clause_freq
        self.max_diff_tokens = max_diff_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.min_interval_s = min_interval_s
        self.breaker_failures = max(1, breaker_failures)  # 0 behaved as 1 before half-open probes existed
        self.breaker_cooldown_s = breaker_cooldown_s
        self._failures_in_a_row = 0
        self._open_until = 0.0
        self.overflow = overflow
        self._lock = threading.Lock()  # one request at a time keeps the rate limit honest
        self._state = threading.Lock()  # guards the breaker's fields, never held during a request
        self._last_request = 0.0
        self.requests = 0
        self.retries = 0

    @property
    def manifest_hash(self) -> str:
        return f"remote:{self.index}"

    def params(self) -> dict[str, Any]:
        return {"backend": self.name, "max_clause_freq": self.max_clause_freq,
                "max_diff_tokens": self.max_diff_tokens, "overflow": self.overflow}

    def _shape(self, clauses: Clauses) -> tuple[Clauses | None, str | None]:
        for clause in clauses:
            for term in clause:
                if any(word in f" {term} " for word in RESERVED):
                    return None, f"term {term!r} contains AND/OR, which the API would parse as an operator"
        if any(len(clause) > API_MAX_TERMS for clause in clauses):
            return None, f"the API allows at most {API_MAX_TERMS} terms per clause"
        if len(clauses) > API_MAX_CLAUSES:
            if self.overflow == "fail":
                return None, (f"query has {len(clauses)} clauses; the API allows {API_MAX_CLAUSES} "
                              f"(set overflow: truncate to query the first {API_MAX_CLAUSES})")
            clauses = clauses[:API_MAX_CLAUSES]
        return clauses, None

    def count(self, clauses: Clauses) -> Outcome:
        shaped, error = self._shape(clauses)
        if error:
            return Outcome(None, error=error)
        payload = {"index": self.index, "query_type": "count", "query": format_query([list(c) for c in shaped])}
        if len(shaped) > 1 or len(shaped[0]) > 1:
            payload["max_diff_tokens"] = self.max_diff_tokens
            payload["max_clause_freq"] = self.max_clause_freq
        with self._state:
            now = time.monotonic()
            if now < self._open_until:
                return Outcome(None, refused=True,
                               error=f"remote: circuit open after {self._failures_in_a_row} failed queries in a "
                                     f"row; next probe in {self._open_until - now:.0f} s")
            probing = self._failures_in_a_row >= self.breaker_failures
            if probing:  # half-open: this query is the probe; the others fail fast until it answers
                self._open_until = now + self.breaker_cooldown_s
        outcome, transport_failure = self._post(payload, attempts=1 if probing else self.max_retries + 1)
        with self._state:
            if transport_failure:
                self._failures_in_a_row += 1
                if self._failures_in_a_row >= self.breaker_failures:
                    self._open_until = time.monotonic() + self.breaker_cooldown_s
            else:  # the service answered (even an {"error"} body): the circuit closes
                self._failures_in_a_row = 0
                self._open_until = 0.0
        return outcome

    def _wait_turn(self) -> None:
        delay = self._last_request + self.min_interval_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self._last_request = time.monotonic()

    def _post(self, payload: dict[str, Any], attempts: int) -> tuple[Outcome, bool]:
        """POST with up to `attempts` tries; (outcome, True) when the service never gave a
        usable answer (the failures the breaker counts)."""
        body = json.dumps(payload).encode()
        last = "no attempt"
        with self._lock:
            for attempt in range(attempts):
                if attempt:
                    self.retries += 1
                self._wait_turn()
                self.requests += 1
                request = urllib.request.Request(self.api_url, data=body, method="POST",
                                                 headers={"Content-Type": "application/json",
                                                          "User-Agent": "factrl-harness"})
                retry_after = 0.0
                try:
                    with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                        raw = response.read()
                except urllib.error.HTTPError as err:
                    last = f"HTTP {err.code}"
                    if err.code not in RETRY_STATUS and err.code < 500:
                        return Outcome(None, error=f"remote: {last} {err.reason}"), False
                    retry_after = _retry_after(err.headers.get("Retry-After"))
                except http.client.HTTPException as err:  # IncompleteRead, BadStatusLine: a cut-off answer
                    last = f"{type(err).__name__}: {str(err)[:80]}"
                except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as err:
                    reason = getattr(err, "reason", err)
                    last = f"{type(reason).__name__}: {reason}"
                else:
                    try:
                        data = json.loads(raw)
                    except ValueError:
                        last = f"truncated or non-JSON answer ({len(raw)} bytes: {raw[:40]!r})"
                    else:
                        return self._parse(data), False
                if attempt < attempts - 1:
                    time.sleep(min(self.max_backoff_s, max(retry_after, self.backoff_s * (2 ** attempt))))
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        return Outcome(None, error=f"remote: failed after {tries} ({last})"), True

    @staticmethod
    def _parse(data: Any) -> Outcome:
        """The outcome of a decoded JSON answer (an answer, so never retried)."""
        if not isinstance(data, dict):
            return Outcome(None, error="remote: answer is not a JSON object")
        if data.get("error"):
            return Outcome(None, error=f"remote: {data['error']}")
        count = data.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return Outcome(None, error=f"remote: answer has no valid count ({str(data)[:80]})")
        return Outcome(count, bool(data.get("approx", False)))

    def close(self) -> None:
        pass


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0  # an HTTP date; the exponential backoff applies

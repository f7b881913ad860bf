"""A bounded, logged request to an OpenAI-compatible server (async), shared by the judge client
and the evaluator's `openai` backend.

One request gets one budget of `max_retries + 1` HTTP attempts, spent two ways:

- HTTP failures (timeouts, connection errors, 408, 409, 429, 5xx) are retried by the OpenAI
  SDK itself (`AsyncOpenAI` with explicit `max_retries` and `timeout`): it waits as the
  server's `Retry-After` / `retry-after-ms` header says, else with exponential backoff and jitter.
- Malformed answers (a body that is not JSON, no `choices`, a null or non-string text) are
  invisible to the SDK, so this module re-asks, with backoff (`backoff` seconds, doubling),
  from the same budget: the SDK call after a malformed answer gets only the attempts left.

Attempts are counted by an httpx request hook into a per-request `RequestState` held in a
context variable (each asyncio task has its own copy), so the budget is exact however the SDK
spent its share. Every retry is logged as a warning on the caller's logger (the SDK's own
"Retrying request" line is turned into ours, with the HTTP status that caused it). A request
that exhausts its budget raises `RequestFailed` (the caller counts it and goes on); a request
the server refuses for good (other 4xx) raises `ServerRefused`, a HarnessError naming the
fields the server objected to. Nothing malformed is ever returned, so nothing malformed is
cached. The API key is given by the caller and never logged; URLs are shown without credentials.
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import random
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from ...core.config_values import redact_url
from ...core.errors import HarnessError

T = TypeVar("T")

# Statuses the SDK retries (its `_should_retry`); after its budget they are a failed request,
# not a refusal.
RETRIED_STATUSES = (408, 409, 429)
# Request fields OpenAI-compatible servers take that the SDK's create() has no keyword for
# (vLLM's chat-template arguments: harness/services/judge/thinking.py); sent through `extra_body`.
EXTRA_BODY_FIELDS = ("chat_template_kwargs",)


class RequestFailed(Exception):
    """One request failed for good after its whole retry budget (transient causes only)."""


class ServerRefused(HarnessError):
    """The server rejects the request itself (4xx other than 408/409/429): retrying cannot help."""

    def __init__(self, message: str, status: int | None = None, detail: str = ""):
        super().__init__(message)
        self.status, self.detail = status, detail


class Malformed(Exception):
    """A 200 answer whose body is unusable; raised by parsers, turned into a re-ask here."""


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    completion_tokens: int | None
    prompt_tokens: int | None = None


@dataclass
class RequestState:
    """One request's accounting: HTTP attempts sent, malformed answers, the last failure's cause."""

    budget: int = 1
    label: str = ""
    logger: logging.Logger | None = None
    sent: int = 0
    malformed: int = 0
    cause: str | None = None


_STATE: contextvars.ContextVar[RequestState | None] = contextvars.ContextVar("factrl_request_state", default=None)


async def _on_request(request: Any) -> None:
    state = _STATE.get()
    if state is not None:
        state.sent += 1
        state.cause = None  # a timeout or connection error leaves it unset


async def _on_response(response: Any) -> None:
    state = _STATE.get()
    if state is not None and response.status_code >= 400:
        wait = response.headers.get("retry-after-ms")
        wait = f"{wait} ms" if wait else response.headers.get("retry-after")
        state.cause = f"HTTP {response.status_code}" + (f" (Retry-After: {wait})" if wait else "")


class _RetryLog(logging.Filter):
    """Turns the SDK's INFO "Retrying request in X seconds" into our warning, with its cause."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Retrying request") or not isinstance(record.args, tuple):
            return True
        state = _STATE.get()
        if state is None or state.logger is None:  # a client that is not ours: leave the SDK's line alone
            return True
        delay = record.args[0] if record.args else 0.0
        state.logger.warning("%s: %s; retry %d/%d in %.1fs", state.label, state.cause
                             or "timeout or connection error", state.sent, state.budget - 1, float(delay))
        return False


class _RedactURLs(logging.Filter):
    """httpx(2) logs every request's URL at INFO ("HTTP Request: POST http://user:pw@host/..."),
    which any `logging.basicConfig(level=INFO)` prints: the line stays, its credentials go."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "@" in message:
            record.msg, record.args = redact_url(message), ()
        return True


def _check_credentials(base_url: str, api_key: str, shown: str, label: str, key_setting: str) -> None:
    """httpx turns a URL's user:password into Basic auth, which replaces the SDK's Bearer key:
    with both, the key would silently never be sent. Refuse the combination."""
    from urllib.parse import urlsplit

    try:
        has_userinfo = urlsplit(base_url).username is not None
    except ValueError:
        return  # the SDK reports an unusable URL itself
    if has_userinfo and api_key not in ("", "EMPTY"):
        from ...core.errors import ConfigError

        raise ConfigError(f"{label}: {shown} carries user:password and {key_setting} holds an API key; the HTTP "
                          f"client would send the URL's Basic credentials and never the key. Drop the "
                          f"credentials from the URL, or unset the key")


def _install_retry_log() -> None:
    sdk = logging.getLogger("openai._base_client")
    if not any(isinstance(f, _RetryLog) for f in sdk.filters):
        sdk.addFilter(_RetryLog())
    for name in ("httpx", "httpx2", "httpcore"):  # openai 3 sends through httpx2, which logs as "httpx2"
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactURLs) for f in logger.filters):
            logger.addFilter(_RedactURLs())
    if sdk.getEffectiveLevel() > logging.INFO:  # the SDK logs retries at INFO; its other lines are DEBUG
        sdk.setLevel(logging.INFO)


def refused_fields(body: Any) -> list[str]:
    """Field names a server's error body blames: FastAPI's `detail[].loc`, OpenAI's `error.param`,
    or the `{'a', 'b'}` set in "Unexpected fields in the request: {...}" (transformers serve)."""
    names: list[str] = []
    if isinstance(body, dict):
        detail = body.get("detail")
        if isinstance(detail, list):
            for item in detail:
                loc = item.get("loc") if isinstance(item, dict) else None
                if isinstance(loc, list) and loc:
                    names.append(".".join(str(p) for p in loc if p != "body") or str(loc[-1]))
        elif isinstance(detail, str) and "{" in detail:
            inner = detail[detail.index("{") + 1:detail.rfind("}")]
            names += [n.strip().strip("'\"") for n in inner.split(",") if n.strip()]
        error = body.get("error")
        if isinstance(error, dict) and error.get("param"):
            names.append(str(error["param"]))
    return list(dict.fromkeys(n for n in names if n))


def error_text(body: Any, fallback: str) -> str:
    """The human part of a server's error body (OpenAI's `error.message`, FastAPI's `detail`)."""
    if isinstance(body, dict):
        error, detail = body.get("error"), body.get("detail")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(detail, str):
            return detail
        if isinstance(detail, list):
            return "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail)
    return fallback


class Transport:
    """`AsyncOpenAI` with explicit timeout and retries, plus malformed-answer re-asks.

    Use it from one event loop (the httpx pool belongs to it); `harness.services.judge.loop.LoopThread`
    gives sync callers one.
    """

    def __init__(self, base_url: str, api_key: str, *, timeout: float, max_retries: int, backoff: float,
                 label: str = "openai backend", logger: logging.Logger | None = None,
                 key_setting: str = "the API key variable"):
        import openai

        self.display_url = redact_url(str(base_url))  # for messages and logs: no credentials
        _check_credentials(str(base_url), api_key, self.display_url, label, key_setting)
        self.max_retries, self.backoff, self.label = max(0, int(max_retries)), float(backoff), label
        self.timeout = float(timeout)
        self.log = logger or logging.getLogger("factrl")
        self._openai = openai
        http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [_on_request], "response": [_on_response]})
        self.client = openai.AsyncOpenAI(base_url=str(base_url), api_key=api_key, timeout=self.timeout,
                                         max_retries=self.max_retries, http_client=http)
        _install_retry_log()

    @staticmethod
    def _request(body: dict) -> dict:
        """The SDK's create() keywords for `body`: fields it does not name go in `extra_body`, which
        the SDK merges into the JSON it sends."""
        request = dict(body)
        extra = {name: request.pop(name) for name in EXTRA_BODY_FIELDS if name in request}
        if extra:
            request["extra_body"] = {**(request.get("extra_body") or {}), **extra}
        return request

    async def post(self, endpoint: str, body: dict, parse: Callable[[dict], T], *,
                   state: RequestState | None = None, max_retries: int | None = None) -> T:
        """POST `body` to "chat" (/chat/completions) or "completions" (/completions); returns
        `parse(json)`, where parse raises Malformed for an unusable answer. `state` (optional)
        receives the request's accounting; `max_retries` overrides the budget for this call."""
        openai = self._openai
        retries = self.max_retries if max_retries is None else max(0, int(max_retries))
        state = state or RequestState()
        state.budget, state.label, state.logger, state.sent, state.cause = retries + 1, self.label, self.log, 0, None
        token = _STATE.set(state)
        reasks = 0
        try:
            while True:
                left = state.budget - state.sent - 1
                # with_options copies the client: only pay for it when the budget differs
                client = self.client if left == self.max_retries else self.client.with_options(max_retries=left)
                resource = client.chat.completions if endpoint == "chat" else client.completions
                try:
                    raw = await resource.with_raw_response.create(**self._request(body))
                    return parse(_json(raw.http_response))
                except Malformed as err:
                    state.malformed += 1
                    if state.sent >= state.budget:
                        raise RequestFailed(f"malformed response ({err}) after {state.sent} attempts") from None
                    delay = self.backoff * (2 ** reasks) * (1 + 0.25 * random.random())  # jitter spreads re-asks
                    reasks += 1
                    self.log.warning("%s: malformed response (%s); retry %d/%d in %.1fs", self.label, err,
                                     state.sent, state.budget - 1, delay)
                    await asyncio.sleep(delay)
        except openai.APIStatusError as err:
            status = err.status_code
            if status in RETRIED_STATUSES or status >= 500:
                raise RequestFailed(f"HTTP {status} after {state.sent} attempts") from None
            raise self.refused(status, err) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as err:
            raise RequestFailed(f"{type(err).__name__} after {state.sent} attempts") from None
        except openai.OpenAIError as err:  # anything else the SDK raises fails this request only
            raise RequestFailed(f"{type(err).__name__}: {redact_url(str(err))[:200]}") from None
        finally:
            _STATE.reset(token)

    async def models(self) -> list[str]:
        """The ids GET /models lists (one attempt); raises RequestFailed or ServerRefused."""
        openai = self._openai
        token = _STATE.set(RequestState(budget=1, label=self.label, logger=self.log))
        try:
            page = await self.client.with_options(max_retries=0).models.list()
            return [str(m.id) for m in page.data]
        except openai.APIStatusError as err:
            if err.status_code in RETRIED_STATUSES or err.status_code >= 500:
                raise RequestFailed(f"HTTP {err.status_code}") from None
            raise self.refused(err.status_code, err) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as err:
            raise RequestFailed(type(err).__name__) from None
        except (openai.OpenAIError, ValueError, TypeError, AttributeError) as err:  # an odd listing: unknown
            raise RequestFailed(f"{type(err).__name__}: {redact_url(str(err))[:200]}") from None
        finally:
            _STATE.reset(token)

    def refused(self, status: int, err: Any) -> ServerRefused:
        try:
            body = err.response.json()
        except (ValueError, AttributeError):
            body = None
        fields = refused_fields(body)
        named = f" refused field(s): {', '.join(fields)};" if fields else ""
        text = redact_url(error_text(body, str(err)))[:300]
        return ServerRefused(f"the server at {self.display_url} refused the request ({status}):{named} {text}",
                             status, text)

    async def aclose(self) -> None:
        await self.client.close()


def _json(response: Any) -> dict:
    try:
        data = json.loads(response.text)
    except ValueError as err:
        raise Malformed(f"invalid JSON: {err.msg} at character {err.pos}") from None
    if not isinstance(data, dict):
        raise Malformed("the body is not a JSON object")
    return data


def first_choice(data: dict) -> dict:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Malformed("no choices")
    return choices[0]


def _usage(data: dict, key: str) -> int | None:
    usage = data.get("usage")
    tokens = usage.get(key) if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) else None


def _finish(choice: dict) -> str | None:
    reason = choice.get("finish_reason")
    return reason if isinstance(reason, str) else None


def parse_chat(data: dict) -> Completion:
    """A /chat/completions answer: the first choice's message content (must be a string)."""
    choice = first_choice(data)
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        hint = " (the server's reasoning parser took the text: start it without one)" \
            if isinstance(message, dict) and message.get("reasoning_content") else ""
        raise Malformed(f"message content is {type(content).__name__ if content is not None else 'null'}{hint}")
    return Completion(content, _finish(choice), _usage(data, "completion_tokens"), _usage(data, "prompt_tokens"))


def parse_completion(data: dict) -> Completion:
    """A /completions answer: the first choice's text (must be a string)."""
    choice = first_choice(data)
    text = choice.get("text")
    if not isinstance(text, str):
        raise Malformed(f"choice text is {type(text).__name__ if text is not None else 'null'}")
    return Completion(text, _finish(choice), _usage(data, "completion_tokens"), _usage(data, "prompt_tokens"))

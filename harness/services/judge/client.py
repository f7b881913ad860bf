"""`Judge`: an LLM judge behind any OpenAI-compatible server, for reward methods.

`ask_many(prompt, items)` is a sync call; inside, every item runs as a task on the judge's
private event loop (`loop.LoopThread`), through the shared transport (the SDK's `AsyncOpenAI`
with explicit `max_retries` and `timeout`; it honours Retry-After), at most `concurrency`
requests in flight (an asyncio semaphore). Per item:

1. the cache (successful parses only) and the batch's identical items are looked up first;
   the request carries the prompt's `decoding` where set, the judge group's for the rest
   (`decoding_for`), and that effective decoding is part of the cache key;
2. a prompt with a `schema` is asked for a structured reply where the endpoint takes one
   (`judge.reply_mode`, structured.py; probed once), decoded by `parse_json`; otherwise the
   text reply is parsed by the prompt's strict parser; an unreadable reply is re-asked at most
   `max_reasks` times (the reply and a format reminder are added to the conversation);
3. an item whose transport budget runs out, that the server refuses, or whose replies stay
   unreadable is a failure: `JudgeResult(ok=False, value=None)`, counted, never cached. The
   method gives it no reward signal (`None`) and logs `rewards/<method>/judge_failed`.

Nothing loops without a bound: worst case per item = (max_reasks + 1) x (max_retries + 1)
x timeout, plus backoffs. Accounting goes to `stats()` and `<run_dir>/judge_stats.json`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ...core.errors import ConfigError, HarnessError

from . import structured, thinking
from .cache import MISSING, JudgeCache, cache_key
from .loop import LoopThread
from .provenance import PromptLog
from .settings import JudgeSettings
from .spec import JudgePrompt, ParseError
from .stats import FILENAME, WRITE_EVERY_S, JudgeStats, check_failed_share
from .transport import RequestFailed, RequestState, ServerRefused, Transport, parse_chat

log = logging.getLogger("factrl.harness.services.judge")

# The preflight's request: one token is enough to prove the model answers.
_PING = [{"role": "user", "content": "Reply with the letter A."}]


@dataclass(frozen=True)
class JudgeResult:
    value: Any
    ok: bool
    error: str | None = None
    cached: bool = False
    attempts: int = 0  # HTTP requests this item cost (0 for a cache hit)
    reasks: int = 0


class Judge:
    """Use `factrl.harness.services.judge.open_judge(cfg.judge, run_dir=...)`; this is what it returns."""

    def __init__(self, settings: JudgeSettings, *, base_url: str, served_model: str, endpoint_id: str,
                 component: dict[str, Any], api_key: str, run_dir: str | Path | None = None,
                 cache: JudgeCache | None = None, server: Any = None):
        self.settings, self.served_model, self.endpoint_id = settings, served_model, endpoint_id
        self._component, self._server, self._cache = component, server, cache
        self._transport = Transport(base_url, api_key, timeout=settings.timeout, max_retries=settings.max_retries,
                                    backoff=settings.backoff, label="judge", logger=log,
                                    key_setting=f"{settings.api_key_env} (judge.api_key_env)")
        self._loop = LoopThread()  # after the Transport, which may refuse the settings
        self.display_url = self._transport.display_url
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._prompts = PromptLog()
        # Whether the endpoint takes structured replies: None until probed (structured.py).
        self._structured: bool | None = None
        self._probe_lock = asyncio.Lock()
        self._thinking_kwarg = thinking.NOT_SENT  # sent | refused (by the server) | not sent
        self._stats = JudgeStats()
        self._stats_written = 0.0
        self.stats_path = Path(run_dir) / FILENAME if run_dir is not None else None
        if self.stats_path is not None and self.stats_path.is_file():
            self._stats.resume_from(self.stats_path)
        self._closed = False

    # --- public API ---------------------------------------------------------------------------

    def register(self, *prompts: JudgePrompt) -> None:
        """Name the prompts this run will ask, so the component lists them before the first call
        (train/components.json is written before training); asking registers a prompt too."""
        for prompt in prompts:
            self._prompts.record(prompt, self._mode_of(prompt))

    def ask_many(self, prompt: JudgePrompt, items: Sequence[dict]) -> list[JudgeResult]:
        """One result per item, in order; failures are results (ok=False), never exceptions."""
        if self._closed:
            raise HarnessError("the judge is closed; open a new one with open_judge(...)")
        self._prompts.record(prompt, self._mode_of(prompt))
        started = time.perf_counter()
        try:
            return self._loop.run(self._ask_all(prompt, list(items)))
        finally:
            self._stats.add(prompt.name, wait_s=time.perf_counter() - started)
            self._write_stats()

    def ask(self, prompt: JudgePrompt, item: dict) -> JudgeResult:
        return self.ask_many(prompt, [item])[0]

    def check_failed_share(self, results: Sequence[JudgeResult], *, where: str = "this step") -> int:
        """The failed count; stops the run (JudgeFailuresExceeded) above `judge.max_failed_share`."""
        return check_failed_share(results, self.settings.max_failed_share, where=where, stats_file=self.stats_path)

    def check(self) -> None:
        """Preflight before training: the server answers, knows the model and takes the key.

        Raises a one-line ConfigError naming the setting to fix (judge.base_url, judge.model,
        judge.api_key_env)."""
        self._loop.run(self._check())

    def stats(self) -> dict[str, float]:
        """Counters over this run (earlier attempts of a resumed run included); see stats.py."""
        return self._stats.snapshot()["totals"]

    def describe(self) -> dict[str, Any]:
        """The judge's component entry (kind "judge") for train/components.json (provenance.py):
        what answered, the paper's judge, the prompts asked and the reply mode used."""
        prompts = self._prompts.as_dict()
        used = structured.JSON_SCHEMA if structured.JSON_SCHEMA in self._prompts.modes() else structured.TEXT
        own = {p.name: p.decoding.enable_thinking for p in self._prompts.prompts()
               if p.decoding.enable_thinking is not None}
        return {**self._component, "reply_mode": used, "reply_mode_setting": self.settings.reply_mode,
                "structured_supported": self._structured, "prompts": prompts,
                "thinking": {"enable_thinking": self.settings.enable_thinking, "prompts": own,
                             "kwarg": self._thinking_kwarg}}

    def decoding_for(self, prompt: JudgePrompt) -> dict[str, Any]:
        """The decoding a request for `prompt` carries: the prompt's fields where set, the judge
        group's for the rest, every reply bounded by `judge.max_tokens_cap`; top_p only if set;
        the thinking setting as `chat_template_kwargs` when set and the server has not refused it."""
        s, own = self.settings, prompt.decoding.given()
        decoding: dict[str, Any] = {"temperature": float(own.get("temperature", s.temperature)),
                                    "max_tokens": int(own.get("max_tokens", s.max_tokens))}
        top_p = own.get("top_p", s.top_p)
        if top_p is not None:
            decoding["top_p"] = float(top_p)
        if s.max_tokens_cap is not None:
            decoding["max_tokens"] = min(decoding["max_tokens"], int(s.max_tokens_cap))
        if self._thinking_kwarg != thinking.REFUSED:
            decoding.update(thinking.template_kwargs(own.get("enable_thinking", s.enable_thinking)))
        return decoding

    def close(self) -> None:
        """Close the client, stop an embedded server, write judge_stats.json; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run(self._transport.aclose())
        except Exception as err:  # noqa: BLE001 - closing must go on to stop the server
            log.debug("judge client close: %s", err)
        finally:
            self._loop.close()
            if self._cache is not None:
                self._cache.close()
            if self._server is not None:
                self._server.stop()
            self._write_stats()

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------------

    def _write_stats(self, *, throttled: bool = False) -> None:
        if self.stats_path is None:
            return
        now = time.monotonic()
        if throttled and now - self._stats_written < WRITE_EVERY_S:
            return
        self._stats_written = now
        self._stats.write(self.stats_path, self.describe())

    def _mode_of(self, prompt: JudgePrompt) -> str:
        """The reply mode `prompt` is asked in: text, json_schema, or auto (not probed yet)."""
        if prompt.schema is None or self.settings.reply_mode == structured.TEXT:
            return structured.TEXT
        if self.settings.reply_mode == structured.JSON_SCHEMA:
            return structured.JSON_SCHEMA
        if self._structured is None:
            return "auto"
        return structured.JSON_SCHEMA if self._structured else structured.TEXT

    async def _ask_all(self, prompt: JudgePrompt, items: list[dict]) -> list[JudgeResult]:
        decoding = self.decoding_for(prompt)
        conversations = [prompt.render(item) for item in items]
        if prompt.schema is not None and self.settings.reply_mode != structured.TEXT:
            await self._ensure_probed()
        mode = self._mode_of(prompt)
        self._prompts.record(prompt, mode)
        # At temperature > 0 two identical items are two samples: neither shared nor cached,
        # unless the prompt says its replies may be reused.
        reusable = decoding["temperature"] == 0 or prompt.cache_sampled
        keyed = {**decoding, structured.FIELD: structured.JSON_SCHEMA} if mode == structured.JSON_SCHEMA else decoding
        keys = [cache_key(endpoint=self.endpoint_id, model=self.served_model, prompt=prompt.name,
                          version=prompt.version, sampling=keyed, messages=messages) for messages in conversations]
        results: list[JudgeResult | None] = [None] * len(items)
        first_of: dict[str, int] = {}
        pending: list[int] = []
        hits = duplicates = 0
        for i, key in enumerate(keys):
            if reusable and key in first_of:
                duplicates += 1
                continue
            first_of[key] = i
            value = self._cache.get(key) if (reusable and self._cache is not None) else MISSING
            if value is not MISSING:
                results[i] = JudgeResult(value, True, cached=True)
                hits += 1
            else:
                pending.append(i)
        self._stats.add(prompt.name, items=len(items), cache_hits=hits, deduplicated=duplicates)
        answers = await asyncio.gather(*(self._ask_one(prompt, conversations[i], keys[i], decoding, reusable, mode)
                                         for i in pending))
        for i, answer in zip(pending, answers):
            results[i] = answer
        for i, key in enumerate(keys):
            if results[i] is None:  # a duplicate: share the first item's result
                results[i] = results[first_of[key]]
        return results  # type: ignore[return-value]

    async def _ask_one(self, prompt: JudgePrompt, messages: list[dict], key: str, decoding: dict,
                       reusable: bool, mode: str) -> JudgeResult:
        conversation, attempts, reasks = list(messages), 0, 0
        while True:
            state = RequestState()
            body = {"model": self.served_model, "messages": conversation, **decoding}
            if mode == structured.JSON_SCHEMA:
                body[structured.FIELD] = structured.response_format(prompt.name, prompt.schema or {})
            try:
                async with self._slots:
                    completion = await self._transport.post("chat", body, parse_chat, state=state)
            except ServerRefused as err:
                if thinking.FIELD in body and thinking.names_the_field(err):
                    # The server takes no chat-template arguments: ask without them from now on, and
                    # cache nothing of this item (its key says the argument was sent).
                    attempts += state.sent
                    self._count(prompt, state)
                    if self._thinking_kwarg != thinking.REFUSED:
                        log.warning("judge at %s refuses %s (%s): thinking is the server's default for this run",
                                    self.display_url, thinking.FIELD, err.status)
                    self._thinking_kwarg = thinking.REFUSED
                    decoding = {k: v for k, v in decoding.items() if k != thinking.FIELD}
                    reusable = False
                    continue
                if (mode == structured.JSON_SCHEMA and self.settings.reply_mode == "auto"
                        and structured.names_the_field(err)):
                    # The probe's finding went stale (a server swapped under the same URL): text from now on.
                    attempts += state.sent
                    self._count(prompt, state)
                    self._remember_structured(False)
                    mode = structured.TEXT
                    self._prompts.record(prompt, mode)
                    continue
                self._count(prompt, state, failures=1)
                log.warning("judge %s: item failed (%s)", prompt.name, err)
                return JudgeResult(None, False, str(err), attempts=attempts + state.sent, reasks=reasks)
            except RequestFailed as err:
                self._count(prompt, state, failures=1)
                log.warning("judge %s: item failed (%s)", prompt.name, err)
                return JudgeResult(None, False, str(err), attempts=attempts + state.sent, reasks=reasks)
            attempts += state.sent
            if thinking.FIELD in body:
                self._thinking_kwarg = thinking.SENT
            self._count(prompt, state, input_tokens=completion.prompt_tokens or 0,
                        output_tokens=completion.completion_tokens or 0)
            reply, leaked = thinking.strip_thinking(completion.text)
            if leaked:
                self._stats.add(prompt.name, thinking_stripped=1)
            try:
                if completion.finish_reason == "length":  # a cut reply may lose its last fact or grade
                    raise ParseError(f"reply cut at max_tokens={decoding['max_tokens']}")
                value = (structured.decode_reply(prompt, reply) if mode == structured.JSON_SCHEMA
                         else prompt.parse(reply))
            except ParseError as err:
                self._stats.add(prompt.name, parse_failures=1)
                if reasks >= self.settings.max_reasks:
                    self._stats.add(prompt.name, failures=1)
                    return JudgeResult(None, False, f"unreadable reply after {reasks + 1} answer(s): {err}",
                                       attempts=attempts, reasks=reasks)
                reasks += 1
                self._stats.add(prompt.name, reasks=1)
                conversation = [*conversation, {"role": "assistant", "content": completion.text},
                                {"role": "user", "content": prompt.reask(str(err))}]
                continue
            if reusable and self._cache is not None:
                self._cache.put(key, value, prompt=prompt.name, version=prompt.version, model=self.served_model)
            return JudgeResult(value, True, attempts=attempts, reasks=reasks)

    # --- structured replies: probed once per endpoint -----------------------------------------

    def _remember_structured(self, supported: bool) -> None:
        self._structured = supported
        if self._cache is not None:
            self._cache.put_meta(structured.record_key(self.endpoint_id, self.served_model),
                                 "true" if supported else "false")

    async def _ensure_probed(self) -> None:
        async with self._probe_lock:  # concurrent first batches probe once
            if self._structured is None:
                record = self._cache.get_meta(structured.record_key(self.endpoint_id, self.served_model)) \
                    if self._cache is not None else None
                if record in ("true", "false"):
                    self._structured = record == "true"
                else:
                    supported = await self._probe()
                    if supported is None:  # no answer: text for this run, probed again next run
                        self._structured = False
                    else:
                        self._remember_structured(supported)
                for prompt in self._prompts.prompts():  # registered as "auto": now the mode they get
                    self._prompts.record(prompt, self._mode_of(prompt))
        if self._structured is False and self.settings.reply_mode == structured.JSON_SCHEMA:
            raise ConfigError(f"judge.reply_mode=json_schema, but the judge at {self.display_url} does not take "
                              f"structured replies (response_format json_schema); set judge.reply_mode=auto or text.")

    async def _probe(self) -> bool | None:
        """True / False: the endpoint follows / refuses or ignores a trivial schema; None: no answer."""
        body = structured.probe_body(self.served_model)
        try:
            completion = await self._transport.post("chat", body, parse_chat,
                                                    max_retries=min(1, self.settings.max_retries))
        except ServerRefused as err:
            if structured.names_the_field(err):
                log.info("judge at %s: no structured replies (%s refuses response_format); asking in text",
                         self.display_url, err.status)
            else:
                log.warning("judge: the structured-reply probe was refused (%s); asking in text", err)
            return False
        except RequestFailed as err:
            log.warning("judge: the structured-reply probe failed (%s); asking in text for this run", err)
            return None
        followed = structured.probe_followed(completion.text)
        log.info("judge at %s: structured replies %s", self.display_url,
                 "supported" if followed else f"ignored (the probe got {completion.text[:40]!r}); asking in text")
        return followed

    def _count(self, prompt: JudgePrompt, state: RequestState, **extra: float) -> None:
        self._stats.add(prompt.name, calls=state.sent, retries=max(0, state.sent - 1), **extra)
        self._write_stats(throttled=True)  # a killed attempt's calls stay accounted

    async def _check(self) -> None:
        s, url = self.settings, self.display_url
        key_fix = f"put a valid key in the environment variable {s.api_key_env} (judge.api_key_env)"
        down = ("start the judge server there (e.g. `vllm serve MODEL --port 8000`) or set judge.base_url to a "
                "running OpenAI-compatible server")
        try:
            served = await self._transport.models()
        except RequestFailed as err:
            if "Timeout" in str(err) or "Connection" in str(err):
                raise ConfigError(f"judge.base_url={url} does not answer ({err}): {down}.") from None
            served = []  # cannot list (transformers serve without a hub cache answers 500): the ping decides
        except ServerRefused as err:
            if err.status in (401, 403):
                raise ConfigError(f"the judge at {url} refused the API key ({err.status}): {key_fix}.") from None
            served = []
        if served and self.served_model not in served:
            shown = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
            raise ConfigError(f"judge.model={self.served_model!r} is not served at {url} (it serves: {shown}); "
                              f"set judge.model to one of them.")
        body = {"model": self.served_model, "messages": _PING, "max_tokens": 1, "temperature": 0.0}
        try:
            await self._transport.post("chat", body, parse_chat, max_retries=min(1, s.max_retries))
        except ServerRefused as err:
            if err.status in (401, 403):
                raise ConfigError(f"the judge at {url} refused the API key ({err.status}): {key_fix}.") from None
            if err.status == 404 or any(word in err.detail.lower() for word in ("model", "pinned")):
                raise ConfigError(f"judge.model={self.served_model!r} is unknown to the server at {url} "
                                  f"({err.status}: {err.detail[:160]}); set judge.model to a model it serves."
                                  ) from None
            raise ConfigError(f"judge check: {err}") from None
        except RequestFailed as err:
            raise ConfigError(f"judge.base_url={url} does not answer a chat completion ({err}): {down}.") from None
        if s.reply_mode != structured.TEXT:
            await self._ensure_probed()

"""`backend=openai`: any OpenAI-compatible server (`vllm serve`, `transformers serve`, ...).

Requests run concurrently (`concurrency` in flight) on the judge client's transport
(`factrl.harness.services.judge.transport.Transport`, the SDK's `AsyncOpenAI` on a private event loop):
the SDK's own retries (explicit `timeout` and `max_retries`; it honours `Retry-After`) for
timeouts, connection errors, 429 and 5xx, and re-asks from the same budget for malformed
answers (invalid JSON, no choices, null content). A request that exhausts its budget is
counted and reported after every other request has finished and been yielded; one the server
refuses (other 4xx, e.g. a bad model name or an unknown field) stops the call, naming the field,
after the requests already in flight are yielded. The API key is read from the environment
variable named by `api_key_env` and is never logged or written; the base URL is shown without
credentials.

Endpoints (`endpoint_for`):
- no response prefix: /chat/completions with harness.core.prompts.chat_messages (system message or
  folded into the first user turn, optional demonstration); the server applies the model's
  chat template.
- a response prefix (e.g. "<think>") and `prefix_endpoint: completions` (default): /completions
  with the prompt formatted by the model's own chat template (harness.core.prompts.format_prompt,
  local tokenizer), exactly as the hf and vllm backends build it; this works on any server.
- `prefix_endpoint: chat-continue` (opt-in, vLLM's server only): the prefix as a final assistant
  message that the server continues (`continue_final_message`, `add_generation_prompt`).
Sampling knobs the OpenAI schema lacks (top_k, repetition_penalty, enable_thinking on the chat
endpoint) go in `extra_body` (top-level fields on the wire, which vLLM understands), and only
when they differ from the neutral value.
"""
from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import as_completed
from typing import Any, Iterator, Sequence

from factrl.harness.core.errors import HarnessError
from factrl.harness.services.models import ModelIdentity
from factrl.harness.core.prompts import chat_messages, format_prompt, response_prefix

from factrl.harness.services.judge.loop import LoopThread
from factrl.harness.services.judge.transport import Completion, RequestFailed, Transport, parse_chat, parse_completion

from .base import Backend, BackendError, Decoding, Generation, GenerationEntry, Request
from .settings import OpenAIEvalSettings

log = logging.getLogger("factrl.evals")


def endpoint_for(model_cfg: Any, settings: Any) -> str:
    """"chat", "completions" or "chat-continue": where this model's requests go (recorded in results).
    `settings`: eval.openai (a mapping or OpenAIEvalSettings; None: the YAML's)."""
    if not response_prefix(model_cfg):
        return "chat"
    return openai_settings(settings).prefix_endpoint


def openai_settings(settings: Any) -> OpenAIEvalSettings:
    return settings if isinstance(settings, OpenAIEvalSettings) else OpenAIEvalSettings.from_mapping(settings)


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, identity: ModelIdentity, model_cfg: Any, decoding: Decoding, *, settings: Any = None):
        settings = openai_settings(settings)
        base_url = settings.base_url
        if not base_url:
            raise HarnessError("backend=openai needs eval.openai.base_url (e.g. http://127.0.0.1:8000/v1).")
        self.served_model = str(settings.model or identity.id)
        self.concurrency = settings.concurrency
        self.extra_body = dict(settings.extra_body)
        self.model_cfg, self.decoding = model_cfg, decoding
        self.endpoint = endpoint_for(model_cfg, settings)
        self.tokenizer, self._bos = None, ""
        if self.endpoint == "completions":
            self.tokenizer, self._bos = _prompt_tokenizer(identity, model_cfg)
        key_env = settings.api_key_env
        # Local servers accept any key; the client refuses an empty one.
        self.client = Transport(str(base_url), os.environ.get(key_env) or "EMPTY", timeout=settings.timeout,
                                max_retries=settings.max_retries, backoff=settings.backoff, logger=log,
                                key_setting=f"{key_env} (eval.openai.api_key_env)")
        self.loop = LoopThread("factrl-openai-backend")
        self.base_url = self.client.display_url  # what messages show: no credentials

    def _sampling(self, body: dict, extra: dict) -> None:
        d = self.decoding
        if d.do_sample:
            body["top_p"] = d.top_p
            if d.top_k > 0:
                extra["top_k"] = d.top_k
            if d.seed is not None:
                body["seed"] = d.seed
        if d.presence_penalty:
            body["presence_penalty"] = d.presence_penalty
        if d.repetition_penalty != 1.0:
            extra["repetition_penalty"] = d.repetition_penalty

    def _body(self, request: Request) -> dict:
        d, cfg = self.decoding, self.model_cfg
        body: dict[str, Any] = {"model": self.served_model, "max_tokens": d.max_new_tokens,
                                "temperature": d.temperature if d.do_sample else 0.0}
        extra = dict(self.extra_body)
        if self.endpoint == "completions":
            # The local template already holds enable_thinking and the prefix; the server
            # tokenises the text, adding the BOS itself when the tokenizer does (see _bos).
            prompt = format_prompt(self.tokenizer, request.question, cfg, system=request.system)
            body["prompt"] = prompt[len(self._bos):] if self._bos and prompt.startswith(self._bos) else prompt
        else:
            body["messages"] = chat_messages(request.question, cfg, system=request.system)
            if self.endpoint == "chat-continue":
                body["messages"].append({"role": "assistant", "content": response_prefix(cfg)})
                extra.update(continue_final_message=True, add_generation_prompt=False)
            thinking = cfg.get("enable_thinking") if cfg is not None else None
            if thinking is not None:
                extra.setdefault("chat_template_kwargs", {})["enable_thinking"] = bool(thinking)
        self._sampling(body, extra)
        if extra:
            body["extra_body"] = extra
        return body

    async def _one(self, request: Request, slots: asyncio.Semaphore, stopped: list[bool]) -> Generation | None:
        async with slots:
            if stopped[0]:  # queued behind a refusal: never sent
                return None
            if self.endpoint == "completions":
                answer: Completion = await self.client.post("completions", self._body(request), parse_completion)
            else:
                answer = await self.client.post("chat", self._body(request), parse_chat)
        return Generation(answer.text, answer.finish_reason, answer.completion_tokens)

    def generate(self, requests: Sequence[Request]) -> Iterator[tuple[int, Generation]]:
        failures: list[str] = []
        refused: HarnessError | None = None
        slots, stopped = asyncio.Semaphore(self.concurrency), [False]
        futures = {self.loop.submit(self._one(request, slots, stopped)): i for i, request in enumerate(requests)}
        try:
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                try:
                    result = future.result()
                except RequestFailed as err:
                    failures.append(str(err))
                    continue
                except HarnessError as err:
                    # The server refuses the request itself: the rest would be refused too.
                    # Stop queued work, but keep yielding what is already in flight.
                    if refused is None:
                        refused, stopped[0] = err, True
                    continue
                if result is not None:
                    yield futures[future], result
        finally:
            stopped[0] = True
            for future in futures:  # an abandoned generator (Ctrl-C) must not leave work queued
                future.cancel()
        if refused is not None:
            raise refused
        if failures:
            raise BackendError(f"{len(failures)} of {len(requests)} requests to {self.base_url} failed "
                               f"(first: {failures[0]}); finished samples are saved, rerun to resume.")

    def close(self) -> None:
        try:
            self.loop.run(self.client.aclose())
        finally:
            self.loop.close()


def _prompt_tokenizer(identity: ModelIdentity, model_cfg: Any) -> tuple[Any, str]:
    """The model's tokenizer (for its chat template) and the BOS text to strip from prompts.

    Servers tokenise a /completions prompt with special tokens, so a tokenizer that adds a BOS
    would add a second one to a template that already starts with it; stripping it there gives
    the server the same token ids as the hf backend's prompt.
    """
    from factrl.harness.services.models import load_tokenizer

    try:
        tokenizer = load_tokenizer(identity, model_cfg)
    except Exception as err:  # noqa: BLE001 - any failure has the same fixes
        raise HarnessError(
            f"backend=openai with model.response_prefix={response_prefix(model_cfg)!r} formats prompts with the "
            f"model's own tokenizer, which did not load from {identity.path} ({type(err).__name__}); set model.path "
            f"to a directory holding it, or eval.openai.prefix_endpoint=chat-continue (vLLM's server only), or "
            f"model.response_prefix=null.") from None
    return tokenizer, bos_to_strip(tokenizer)


def bos_to_strip(tokenizer: Any) -> str:
    """The BOS text when `tokenizer` adds a BOS itself (a server would double one in the prompt), else ""."""
    bos, bos_id = tokenizer.bos_token, tokenizer.bos_token_id
    adds_bos = bos_id is not None and tokenizer("x")["input_ids"][:1] == [bos_id]
    return bos if bos and adds_bos else ""


def build(identity: ModelIdentity, model_cfg: Any, decoding: Decoding, options: dict[str, Any]) -> OpenAIBackend:
    """The registry's `generation` entry `openai` (evals/backends/__init__.py build_backend)."""
    return OpenAIBackend(identity, model_cfg, decoding, settings=options["settings"])


def provenance(settings: Any, cfg: Any, model_cfg: Any, processes: dict[str, Any]) -> dict[str, Any]:
    """The server, the served model, extra request fields and a non-chat route. Written to
    metrics.json and the leaderboard: no credentials in the URL, no secret-looking keys."""
    from urllib.parse import urlsplit, urlunsplit

    from factrl.harness.core.config_values import redact

    url = settings.openai.base_url
    if url:
        parts = urlsplit(str(url))
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    recorded = {"base_url": url, "model": settings.openai.model, "extra_body": redact(dict(settings.openai.extra_body))}
    endpoint = endpoint_for(model_cfg, settings.openai)
    if endpoint != "chat":  # a response-prefix model's route is a choice; plain chat runs keep their cache keys
        recorded["endpoint"] = endpoint
    return recorded


ENTRY = GenerationEntry(build, provenance)  # the registry's `generation` entry `openai`

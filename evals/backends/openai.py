"""`backend=openai`: any OpenAI-compatible chat-completions server (e.g. `vllm serve`).

Requests run on a thread pool (`concurrency`) with an explicit per-request timeout and a
bounded number of retries with exponential backoff for timeouts, connection errors, 429 and
5xx; other 4xx errors (bad model name, bad key) fail at once. The API key is read from the
environment variable named by `api_key_env` and is never logged or written: results record
only the base URL and the served model name.

The messages are harness.prompts.chat_messages (system message or folded into the first user
turn, optional demonstration), so the server applies the model's chat template; a model's
response prefix (e.g. "<think>") is sent as a final assistant message that vLLM's server
continues (`continue_final_message`). Sampling knobs the OpenAI schema lacks (top_k,
repetition_penalty, enable_thinking) go in `extra_body`, which vLLM's server understands, and
only when they differ from the neutral value.
"""
from __future__ import annotations

import logging
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Iterator, Sequence

from factrl.harness.errors import HarnessError
from factrl.harness.models import ModelIdentity
from factrl.harness.prompts import chat_messages, response_prefix

from .base import Backend, BackendError, Decoding, Generation, Request

log = logging.getLogger("factrl.evals")


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, identity: ModelIdentity, model_cfg: Any, decoding: Decoding, *, settings: Any = None):
        import openai

        settings = settings or {}
        base_url = settings.get("base_url")
        if not base_url:
            raise HarnessError("backend=openai needs eval.openai.base_url (e.g. http://127.0.0.1:8000/v1).")
        self.base_url = str(base_url)
        self.served_model = str(settings.get("model") or identity.id)
        self.concurrency = max(1, int(settings.get("concurrency") or 8))
        self.timeout = float(settings.get("timeout") or 120.0)
        self.max_retries = max(0, int(settings.get("max_retries") if settings.get("max_retries") is not None else 3))
        self.backoff = float(settings.get("backoff") if settings.get("backoff") is not None else 1.0)
        self.extra_body = dict(settings.get("extra_body") or {})
        self.model_cfg, self.decoding = model_cfg, decoding
        key_env = str(settings.get("api_key_env") or "OPENAI_API_KEY")
        # Local servers accept any key; the client refuses an empty one.
        self._openai = openai
        self.client = openai.OpenAI(base_url=self.base_url, api_key=os.environ.get(key_env) or "EMPTY",
                                    timeout=self.timeout, max_retries=0)  # retries are ours (bounded, logged)
        self._retryable = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                           openai.InternalServerError)


    def _body(self, request: Request) -> dict:
        d, cfg = self.decoding, self.model_cfg
        body: dict[str, Any] = {
            "model": self.served_model,
            "messages": chat_messages(request.question, cfg, system=request.system),
            "max_tokens": d.max_new_tokens,
            "temperature": d.temperature if d.do_sample else 0.0,
        }
        extra = dict(self.extra_body)
        prefix = response_prefix(cfg)
        if prefix:
            # The assistant turn starts with the prefix, as in the hf and vllm prompts; vLLM's
            # server continues a final assistant message when asked to.
            body["messages"].append({"role": "assistant", "content": prefix})
            extra.update(continue_final_message=True, add_generation_prompt=False)
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
        thinking = cfg.get("enable_thinking") if cfg is not None else None
        if thinking is not None:
            extra.setdefault("chat_template_kwargs", {})["enable_thinking"] = bool(thinking)
        if extra:
            body["extra_body"] = extra
        return body

    def _one(self, request: Request) -> Generation:
        body = self._body(request)
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.chat.completions.create(**body)
                choice = response.choices[0]
                usage = getattr(response, "usage", None)
                return Generation(choice.message.content or "", choice.finish_reason,
                                  getattr(usage, "completion_tokens", None))
            except self._retryable as err:
                if attempt == self.max_retries:
                    raise BackendError(f"{type(err).__name__} after {attempt + 1} attempts: {err}") from None
                delay = self.backoff * (2 ** attempt) * (1 + 0.25 * random.random())  # jitter spreads retries
                log.warning("openai backend: %s; retry %d/%d in %.1fs", type(err).__name__, attempt + 1,
                            self.max_retries, delay)
                time.sleep(delay)
            except self._openai.APIStatusError as err:
                raise HarnessError(f"the server at {self.base_url} refused the request ({err.status_code}): "
                                   f"{str(err)[:300]}") from None
        raise AssertionError("unreachable")

    def generate(self, requests: Sequence[Request]) -> Iterator[tuple[int, Generation]]:
        failures: list[str] = []
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="openai") as pool:
            futures = {pool.submit(self._one, request): i for i, request in enumerate(requests)}
            try:
                for future in as_completed(futures):
                    try:
                        yield futures[future], future.result()
                    except BackendError as err:
                        failures.append(str(err))
            finally:
                for future in futures:  # an abandoned generator (Ctrl-C) must not leave work queued
                    future.cancel()
        if failures:
            raise BackendError(f"{len(failures)} of {len(requests)} requests to {self.base_url} failed "
                               f"(first: {failures[0]}); finished samples are saved, rerun to resume.")

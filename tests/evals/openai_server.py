"""A scripted OpenAI-compatible server on 127.0.0.1 for the openai backend's tests.

Speaks /v1/chat/completions and /v1/completions and answers "<answer>{question}</answer>"
(the question is the last user message; in a /completions prompt, the last of `questions`). Faults
are scripted per question: `failures[question]` lists the actions for its next attempts, so
each fault kind happens deterministically. `strict=True` refuses fields outside the OpenAI
schema with 422, as `transformers serve` does.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer

CHAT_FIELDS = {"model", "messages", "max_tokens", "temperature", "top_p", "seed", "presence_penalty", "stop",
               "stream", "n", "frequency_penalty"}
COMPLETION_FIELDS = {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "presence_penalty", "stop",
                     "stream", "n", "frequency_penalty", "suffix"}

# action -> what the server does instead of answering
FAULTS = ("500", "503", "429", "400", "slow", "badjson", "nochoices", "null", "nonstring", "cut")


class ScriptedServer(LocalServer):

    def __init__(self, *, strict: bool = False, retry_after: str = "1"):
        super().__init__(_Handler)
        self.strict, self.retry_after = strict, retry_after
        self.slow_seconds = 1.5  # a "slow" reply waits this long: keep it above the client's timeout
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.headers_seen: list[str | None] = []
        self.arrivals: list[tuple[str, float, str]] = []  # (question, monotonic time, action)
        self.failures: dict[str, list[str]] = {}
        self.questions: list[str] = []  # how /completions prompts are told apart
        self.lock = threading.Lock()

    def attempts(self, question: str) -> list[tuple[float, str]]:
        return [(t, a) for q, t, a in self.arrivals if q == question]


def _question(server: "ScriptedServer", path: str, body: dict) -> str:
    if path.endswith("/chat/completions"):
        return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    # A /completions prompt is a whole chat template: the question is the known one that occurs
    # last in it (after any demonstration), else the prompt's last line.
    prompt = str(body.get("prompt", ""))
    found = [(prompt.rfind(q), q) for q in (*server.questions, *server.failures) if q and q in prompt]
    return max(found)[1] if found else (prompt.strip().splitlines() or [""])[-1]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        server: ScriptedServer = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        chat = self.path.endswith("/chat/completions")
        if not chat and not self.path.endswith("/completions"):
            return self._send(404, {"detail": "Not Found"})
        question = _question(server, self.path, body)
        with server.lock:
            server.bodies.append(body)
            server.paths.append(self.path)
            server.headers_seen.append(self.headers.get("Authorization"))
            actions = server.failures.get(question, [])
            action = actions.pop(0) if actions else "ok"
            server.arrivals.append((question, time.monotonic(), action))
        if server.strict:
            unexpected = set(body) - (CHAT_FIELDS if chat else COMPLETION_FIELDS)
            if unexpected:  # transformers serve's words
                return self._send(422, {"detail": f"Unexpected fields in the request: {unexpected}"})
        if action in ("500", "503"):  # retry-after-ms keeps the SDK's backoff short in tests
            return self._send(int(action), {"error": {"message": "boom", "type": "server_error"}},
                              headers={"retry-after-ms": "20"})
        if action == "429":
            return self._send(429, {"error": {"message": "slow down", "type": "rate_limit"}},
                              headers={"Retry-After": server.retry_after})
        if action == "400":
            return self._send(400, {"error": {"message": "bad model", "type": "invalid_request_error",
                                              "param": "model"}})
        if action == "slow":
            time.sleep(server.slow_seconds)  # longer than the client's timeout
        text = f"<answer>{question}</answer>"
        choice = ({"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}} if chat
                  else {"index": 0, "finish_reason": "stop", "text": text})
        if action == "null":
            choice["message" if chat else "text"] = {"role": "assistant", "content": None} if chat else None
        if action == "nonstring":
            choice["message" if chat else "text"] = {"role": "assistant", "content": 42} if chat else 42
        payload = {"id": "c1", "object": "chat.completion" if chat else "text_completion", "created": 0,
                   "model": body["model"], "choices": [] if action == "nochoices" else [choice],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
        data = json.dumps(payload).encode()
        if action == "badjson":
            data = data[: len(data) // 2]  # a truncated body with a matching Content-Length
        self._send(200, raw=data, length=len(data) + (50 if action == "cut" else 0))

    def _send(self, status, payload=None, *, raw: bytes | None = None, length: int | None = None, headers=None):
        data = raw if raw is not None else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(length if length is not None else len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            if length is not None and length > len(data):  # "cut": the connection ends mid-body
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

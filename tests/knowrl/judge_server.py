"""A scripted OpenAI-compatible judge on 127.0.0.1 for the KnowRL tests.

Speaks /v1/chat/completions, /v1/models and /health. Replies are scripted by needle: the
first `script` entry whose needle occurs in the request's messages decides the reply (a
string, or a list consumed one per request, whose last entry then repeats). Needles see the
prompt with its material blocks unwrapped (`<material-h label="answer">Warsaw</material-h>`
reads as `Warsaw`), so a script names the model output as it was written. A reply can be a
fault instead of text: "500" (server error), "slow" (sleeps past the client's timeout),
"badjson" (a truncated body). Without a matching needle the server answers `default` (a
string or such a list). A model
name other than `models` is refused with 404, as OpenAI and vLLM do.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer


class JudgeServer(LocalServer):

    def __init__(self, script: dict[str, str | list[str]] | None = None, *, default: str | list[str] = "C",
                 models: tuple[str, ...] = ("judge-test",), slow_s: float = 2.0):
        super().__init__(_Handler)
        self.script = {k: (list(v) if isinstance(v, list) else v) for k, v in (script or {}).items()}
        self.default, self.models, self.slow_s = default, models, slow_s
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def reply_for(self, text: str) -> str:
        with self.lock:
            reply = next((r for needle, r in self.script.items() if needle in text), self.default)
            if isinstance(reply, list):  # consumed one per request; the last one repeats
                return reply.pop(0) if len(reply) > 1 else reply[0]
            return reply

    def texts(self) -> list[str]:
        """The concatenated message contents of every chat request so far."""
        return [_text(body) for body in self.requests]

    def reply_to(self, body: dict) -> str:
        """The reply to one chat request body; subclasses that must see the material blocks
        themselves (tests/judge/obeying_server.py) override this and read `raw_text(body)`."""
        return self.reply_for(_text(body))


_MATERIAL = re.compile(r'<material-([0-9a-f]{12})(?: label="[^"]*")?>(.*?)</material-\1>', re.DOTALL)


def raw_text(body: dict) -> str:
    """The request's message contents joined, material blocks left as sent."""
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def _text(body: dict) -> str:
    return _MATERIAL.sub(lambda m: m.group(2), raw_text(body))


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        server: JudgeServer = self.server
        if self.path.rstrip("/").endswith("/health"):
            return self._send(200, {"status": "ok"})
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in server.models]})
        return self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802
        server: JudgeServer = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/chat/completions"):
            return self._send(404, {"detail": "Not Found"})
        with server.lock:
            server.requests.append(body)
        if body.get("model") not in server.models:
            return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                              "type": "invalid_request_error", "code": "model_not_found"}})
        reply = server.reply_to(body)
        if reply == "500":
            return self._send(500, {"error": {"message": "boom", "type": "server_error"}},
                              headers={"retry-after-ms": "10"})
        if reply == "slow":
            time.sleep(server.slow_s)
        payload = {"id": "j1", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": reply}}],
                   "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}
        data = json.dumps(payload).encode()
        if reply == "badjson":
            data = data[: len(data) // 2]
        self._send(200, raw=data)

    def _send(self, status, payload=None, *, raw: bytes | None = None, headers=None):
        data = raw if raw is not None else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

"""A scripted OpenAI-compatible judge on 127.0.0.1 for the judge client's tests.

Answers the shared judge prompts the way a good judge would:
- SIMPLEQA_GRADE: "A" when the gold (any of " / "-joined) occurs in the graded answer, "C" for
  "I don't know", else "B";
- ATOMIC_FACTS: one "- " line per sentence of the text, or "NON_FACTUAL: no claims" for none.
The model output in a prompt is read from its material blocks (factrl.harness.services.judge.find_material).
Other chats get "A" (the preflight ping).

Structured replies (`structured=`): "follow" answers a request carrying
`response_format` json_schema with JSON that conforms to the schema (`conform`: the good text
reply mapped onto it; the probe's {"ok": true}); "refuse" answers such a request with 400 naming
the field, as a server without structured outputs does; "ignore" (default: the text path other
tests script) drops the field and answers in prose, as `transformers serve` does.

Thinking (`thinking=`): "none" (default) ignores `chat_template_kwargs`; "qwen3" is a Qwen3 server
without a reasoning parser: the chat template's `enable_thinking` (default true) decides, and a
thinking reply comes back with its `<think>...</think>` block in the content; "refuse" answers a
request carrying `chat_template_kwargs` with 400 naming the field, as OpenAI's API does.

GET /v1/models lists `models`; a chat for another model gets OpenAI's 404. Faults are scripted per item (`failures[key]` lists the actions of its
next attempts; the key is the graded answer or the facts text) or drawn at random for every
attempt (`fault_rate`, seeded per item and attempt), and every arrival is recorded.
"""
from __future__ import annotations

import json
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler

from factrl.harness.services.judge import find_material
from tests.local_server import LocalServer

# action -> what the server does instead of a good reply
FAULTS = ("slow", "429", "500", "badjson", "garbage", "cut", "400")


def _material(text: str, label: str) -> str | None:
    return next((body for name, body in find_material(text) if name == label), None)


def item_key(messages: list[dict]) -> str:
    text = messages[0]["content"]
    answer = _material(text, "answer") if "Answer to grade:" in text else None
    if answer is not None:
        return answer.strip()
    facts = _material(text, "text")
    return facts.strip() if facts is not None else text


def good_reply(messages: list[dict]) -> str:
    text = messages[0]["content"]
    gold = re.search(r"^Gold answer: (.*)$", text, re.MULTILINE)
    answer = _material(text, "answer")
    if gold and answer is not None:
        golds, answer = gold.group(1).lower().split(" / "), answer.lower()
        if "don't know" in answer:
            return "C"
        return "A" if any(g in answer for g in golds) else "B"
    facts = _material(text, "text")
    if facts is not None:
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", facts) if len(s.split()) >= 3]
        return "\n".join(f"- {s}" for s in sentences) if sentences else "NON_FACTUAL: no claims"
    return "A"


def conform(schema: dict, reply: str):
    """A JSON value of `schema` carrying what the text `reply` says (enough JSON Schema for judge
    prompts: objects, enums, strings, string arrays of "- " lines, booleans, numbers)."""
    kind = schema.get("type")
    if "enum" in schema:
        word = reply.strip().strip(".").strip()
        return next((v for v in schema["enum"] if str(v).lower() == word.lower()), schema["enum"][0])
    if kind == "object":
        props = schema.get("properties", {})
        return {name: conform(props[name], reply) for name in schema.get("required", list(props))}
    if kind == "array":
        lines = [line[2:].strip() for line in reply.splitlines() if line.startswith("- ")]
        return [conform(schema.get("items", {"type": "string"}), line) for line in lines]
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        found = re.search(r"-?\d+(?:\.\d+)?", reply)
        number = float(found.group()) if found else 0.0
        return int(number) if kind == "integer" else number
    return reply


class JudgeServer(LocalServer):
    request_queue_size = 64  # room for the benchmark's and the fault test's bursts

    def __init__(self, *, models=("judge-model",), latency: float = 0.0, retry_after: str = "1",
                 fault_rate: float = 0.0, fault_kinds=("slow", "429", "500", "badjson", "garbage"), seed: int = 0,
                 structured: str = "ignore", reply_for=None, thinking: str = "none"):
        super().__init__(_Handler)
        assert structured in ("follow", "refuse", "ignore")
        assert thinking in ("none", "qwen3", "refuse")
        self.structured, self.thinking = structured, thinking
        self.reply_for = reply_for  # messages -> the text a good judge replies (None: good_reply)
        self.models, self.latency, self.retry_after = list(models), latency, retry_after
        self.fault_rate, self.fault_kinds, self.seed = fault_rate, tuple(fault_kinds), seed
        self.failures: dict[str, list[str]] = {}
        self.arrivals: list[tuple[str, float, str]] = []  # (item key, monotonic time, action)
        self.bodies: list[dict] = []
        self.headers_seen: list[str | None] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()

    def draw(self, key: str) -> str:
        """The random action of this item's next attempt: seeded by (seed, item, attempt), so the
        same faults hit the same attempts whatever order concurrent requests arrive in."""
        attempt = sum(1 for k, _, _ in self.arrivals if k == key)
        rng = random.Random(f"{self.seed}:{key}:{attempt}")
        return rng.choice(self.fault_kinds) if rng.random() < self.fault_rate else "ok"

    def actions(self, key: str) -> list[str]:
        return [a for k, _, a in self.arrivals if k == key]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path.endswith("/models"):
            listed = [{"id": m, "object": "model"} for m in self.server.models]
            return self._send(200, {"object": "list", "data": listed})
        if self.path.endswith("/health"):
            return self._send(200, {"status": "ok"})
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802
        server: JudgeServer = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/chat/completions"):
            return self._send(404, {"detail": "Not Found"})
        if body.get("model") not in server.models:
            return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                              "type": "invalid_request_error", "param": "model"}})
        key = item_key(body["messages"])
        with server.lock:
            server.bodies.append(body)
            server.headers_seen.append(self.headers.get("Authorization"))
            scripted = server.failures.get(key)
            if scripted:
                action = scripted.pop(0)
            else:
                action = server.draw(key)
            server.arrivals.append((key, time.monotonic(), action))
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            self._answer(server, body, action)
        finally:
            with server.lock:
                server.in_flight -= 1

    def _answer(self, server: JudgeServer, body: dict, action: str) -> None:
        if server.latency:
            time.sleep(server.latency)
        if action == "500":  # retry-after-ms keeps the SDK's backoff short in tests
            return self._send(500, {"error": {"message": "boom", "type": "server_error"}},
                              headers={"retry-after-ms": "20"})
        if action == "429":
            return self._send(429, {"error": {"message": "slow down", "type": "rate_limit"}},
                              headers={"Retry-After": server.retry_after})
        if action == "400":
            return self._send(400, {"error": {"message": "prompt too long", "type": "invalid_request_error"}})
        if action == "slow":
            time.sleep(1.5)  # longer than the tests' client timeout
        template_kwargs = body.get("chat_template_kwargs")
        if template_kwargs is not None and server.thinking == "refuse":
            return self._send(400, {"error": {"message": "Unrecognized request argument supplied: chat_template_kwargs",
                                              "type": "invalid_request_error", "param": None}})
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        if schema is not None and server.structured == "refuse":
            return self._send(400, {"error": {"message": "response_format is not supported by this server",
                                              "type": "invalid_request_error", "param": "response_format"}})
        reply_for = server.reply_for or good_reply  # looked up per call: tests/evals/semantic_server swaps it
        text = reply_for(body["messages"]) if action != "garbage" else "Well, it depends on the context."
        if schema is not None and server.structured == "follow" and action != "cut":
            text = json.dumps(conform(schema, text))  # a server that enforces the schema: even garbage conforms
        if server.thinking == "qwen3" and (template_kwargs or {}).get("enable_thinking", True):
            text = "<think>\nThe user wants the reply in a fixed form. Let me check.\n</think>\n\n" + text
        if action == "cut":
            text, finish = text[:1] + " and more", "length"
        else:
            finish = "stop"
        payload = {"id": "j1", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": finish,
                                "message": {"role": "assistant", "content": text}}],
                   "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}}
        data = json.dumps(payload).encode()
        if action == "badjson":
            data = data[: len(data) // 2]  # truncated JSON with a matching Content-Length
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

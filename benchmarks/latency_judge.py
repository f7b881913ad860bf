"""A local OpenAI-compatible chat server that answers one fixed reply after a fixed latency,
in its own process (as a real server is: its threads do not compete with the client for this
interpreter's GIL). Shared by the judge-client and judged-evaluation benchmarks."""
from __future__ import annotations

import json
import multiprocessing
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.server.latency)
        data = json.dumps({"id": "b", "object": "chat.completion", "created": 0, "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": self.server.reply}}],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LatencyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, latency: float, reply: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency, self.reply = latency, reply


def _serve(latency: float, reply: str, port: "multiprocessing.Queue") -> None:
    server = LatencyServer(latency, reply)
    port.put(server.server_address[1])
    server.serve_forever(poll_interval=0.05)


def start_server(latency: float, reply: str = "A") -> tuple[multiprocessing.Process, str]:
    """(process, base URL) of a server that answers `reply` after `latency` seconds."""
    port: multiprocessing.Queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=_serve, args=(latency, reply, port), daemon=True)
    proc.start()
    return proc, f"http://127.0.0.1:{port.get(timeout=30)}/v1"

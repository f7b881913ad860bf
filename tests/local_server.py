"""A ThreadingHTTPServer on 127.0.0.1 (a free port) that serves from a thread for a with-block:
the base of the scripted OpenAI-compatible servers the tests talk to over real HTTP."""
from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (`/v1`)."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

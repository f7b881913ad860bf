"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (no websocket
library needed): Chromium reads NUL-terminated JSON commands on fd 3 and answers on fd 4.
Used to click table headers with real mouse events and read the page back."""
from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


class Browser:
    def __init__(self, chromium: str, profile: Path, width: int = 1400, height: int = 1000):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Chromium's ends go above fd 9 first, so `3<&A 4>&B` below can never clobber one another.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome_r, from_chrome_w)]
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        to_chrome_r, from_chrome_w = high
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", f"--window-size={width},{height}", "--remote-debugging-pipe",
                "about:blank"]
        # bash (dash takes single-digit fds only) moves our pipe ends onto fds 3 and 4, where
        # Chromium expects them.
        self.proc = subprocess.Popen(["bash", "-c", f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w}', chromium,
                                      *args], pass_fds=(to_chrome_r, from_chrome_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer, self._next = b"", 0
        self.session: str | None = None

    def call(self, method: str, params: dict | None = None, timeout: float = 30.0, session: bool = True) -> dict:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            ready, _, _ = select.select([self._from_chrome], [], [], 0.2)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the debugging pipe")
                self._buffer += chunk
        raise TimeoutError(f"no answer to {method} within {timeout} s")

    def open(self, url: str, timeout: float = 30.0) -> None:
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        deadline = time.monotonic() + timeout
        while self.js("document.readyState === 'complete' && location.href !== 'about:blank'") is not True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load")
            time.sleep(0.05)

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real left click (mouse events) at the centre of the element."""
        point = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
                        " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": point[0], "y": point[1], "button": "left",
                                                   "clickCount": 1})

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False, timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)

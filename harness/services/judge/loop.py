"""One private asyncio event loop on a daemon thread, for sync callers of async clients.

The judge's `ask_many` and the evaluator's `generate` are sync calls, and the training loop
may already run inside an event loop; `asyncio.run` per call would also throw away the
httpx connection pool (it belongs to one loop). So each client owns a `LoopThread` and hands
it coroutines: `run(coro)` blocks for the result, `submit(coro)` returns a
`concurrent.futures.Future` that can be waited on or cancelled from any thread.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str = "factrl-judge-loop"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = self.submit(coro)
        try:
            return future.result()
        except BaseException:  # Ctrl-C while waiting: stop the work, not just the wait
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the loop and its thread (pending tasks are cancelled first)."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            async def _cancel_rest() -> None:
                rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in rest:
                    task.cancel()
                await asyncio.gather(*rest, return_exceptions=True)

            try:
                self.submit(_cancel_rest()).result(timeout=5)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()

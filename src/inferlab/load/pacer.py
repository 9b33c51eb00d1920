"""Keeping an open-loop schedule to tens of microseconds: a thread that sleeps to each due time.

An asyncio loop's timers are millisecond-granular: uvloop (libuv) rounds a delay to whole ms
and measures it from a clock cached, in ms, at the start of the loop's iteration; the default
loop rounds its epoll timeout up to the next ms. Either fires a timer up to about 1.5 ms from
its due time, which is the whole budget of a replay at 200 req/s. The pacer sleeps in a thread
of its own with the OS's nanosecond clock (``time.sleep`` is ``clock_nanosleep``; the loop
thread keeps running meanwhile, since a sleeping thread holds no GIL) and hands each due
request to the loop with ``call_soon_threadsafe``, which wakes the loop at once. The loop does
no busy-waiting. A send is then late by the thread's wake-up, its wait for the GIL (the loop
holds it only while it runs callbacks, not while it waits for sockets) and one loop iteration.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence

__all__ = ["Pacer"]

_perf_ns = time.perf_counter_ns
_SLICE_S = 0.05  # a long wait is cut into slices, so stop() is seen within 50 ms
_SPIN_NS = 60_000  # the last 60 µs are spun: clock_nanosleep's wake-up costs about that


class Pacer:
    """Calls ``fire(k, due_ns)`` on ``loop`` at each ``dues[k]`` (``perf_counter_ns``), in
    order, never before it; ``fire`` returning False, or ``halt()`` (read from the thread every
    50 ms at most) turning True, stops the schedule. ``done()`` runs on the loop once, when the
    last due has been handed over or the schedule stopped."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        dues: Sequence[int],
        fire: Callable[[int, int], bool],
        done: Callable[[], object],
        halt: Callable[[], bool] = lambda: False,
    ) -> None:
        self._loop = loop
        self._dues = dues
        self._fire = fire
        self._done = done
        self._halt = halt
        self._stop = threading.Event()
        self._finished = False  # done() has run (touched on the loop only)
        self._thread = threading.Thread(target=self._run, name="inferlab-pacer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop handing requests over (idempotent; waits for the thread)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()

    def _on_loop(self, k: int, due: int) -> None:
        if self._finished:
            return
        if self._stop.is_set() or not self._fire(k, due):
            self._stop.set()
            self._finish()

    def _sleep_until(self, due: int) -> bool:
        """Sleep to ``due``; False when stopped meanwhile."""
        while (left := due - _perf_ns()) > _SPIN_NS:
            if self._stop.is_set() or self._halt():
                return False
            time.sleep(min((left - _SPIN_NS) / 1e9, _SLICE_S))
        while _perf_ns() < due:
            pass
        return not self._stop.is_set()

    def _run(self) -> None:
        try:
            for k, due in enumerate(self._dues):
                if not self._sleep_until(due):
                    break
                self._loop.call_soon_threadsafe(self._on_loop, k, due)
            self._loop.call_soon_threadsafe(self._finish)
        except RuntimeError:
            return  # the loop closed under us: the point was torn down

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._done()

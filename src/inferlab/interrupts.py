"""Whether Ctrl-C (SIGINT) has reached this process: the stops that follow it are bounded.

A Ctrl-C raises ``KeyboardInterrupt`` (Python's own handler) or, while a load point runs, sets
the workers' stop flag (``load.phase``); the code on the way to a server's stop :func:`note`\\ s
it (``campaign.parts.launch``, ``campaign.stages.server``, ``load.phase``), and every server
stopped after it is given a short grace period (``server.stop``: SIGTERM, SIGKILL after
``INTERRUPT_GRACE_S``) instead of its configured ``stop_grace_s``: on the H200 a run
interrupted while vLLM was starting had not exited 30 s later, its stop waiting
``stop_grace_s = 30`` before the SIGKILL.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["clear", "note", "on_sigint", "seen", "watching"]

_SEEN = threading.Event()


def note() -> None:
    """Record that a Ctrl-C arrived (safe from a signal handler)."""
    _SEEN.set()


def seen() -> bool:
    """Whether a Ctrl-C arrived since the last :func:`clear`."""
    return _SEEN.is_set()


def clear() -> None:
    _SEEN.clear()


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """One command's span (the CLI's): the record cleared on entry and on exit."""
    clear()
    try:
        yield
    finally:
        clear()


@contextlib.contextmanager
def on_sigint(action: Callable[[], None]) -> Iterator[list[bool]]:
    """While inside (main thread): a Ctrl-C is noted and runs ``action`` instead of raising;
    the list's one flag says whether one came. Elsewhere (another thread) a no-op."""
    hit = [False]
    if threading.current_thread() is not threading.main_thread():
        yield hit
        return

    def handler(signum: int, frame: object) -> None:
        hit[0] = True
        note()
        action()

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield hit
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.default_int_handler)

"""Whether Ctrl-C (SIGINT) has reached this process: the stops that follow it are bounded.

A Ctrl-C raises ``KeyboardInterrupt`` (Python's handler, or the CLI's :func:`watching`), or,
while a load point runs, sets the workers' stop flag (``load.phase``): either way it is
:func:`note`d here, and every server stopped after it is given a short grace period
(``server.stop``: SIGTERM, SIGKILL after ``INTERRUPT_GRACE_S``) instead of its configured
``stop_grace_s``: on the H200 a run interrupted while vLLM was starting had not exited 30 s
later, its stop waiting ``stop_grace_s = 30`` before the SIGKILL.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["clear", "note", "seen", "watching"]

_SEEN = threading.Event()


def note() -> None:
    """Record that a Ctrl-C arrived (from a signal handler: no lock, no I/O)."""
    _SEEN.set()


def seen() -> bool:
    """Whether a Ctrl-C arrived since the last :func:`clear`."""
    return _SEEN.is_set()


def clear() -> None:
    _SEEN.clear()


def _raise(signum: int, frame: object) -> None:
    note()
    raise KeyboardInterrupt


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """While inside (one CLI command): SIGINT is noted and raises ``KeyboardInterrupt`` as
    Python's own handler does; the record is cleared on entry and exit. Off the main thread
    (no signal can be handled there) only the record is cleared."""
    clear()
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, _raise) if main else None
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
        clear()

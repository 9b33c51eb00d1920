"""A launched server that goes down with the process that launched it (Linux).

``parent_death_hook()`` returns a ``preexec_fn`` for ``subprocess.Popen`` that asks the kernel
(``prctl(PR_SET_PDEATHSIG)``, kept across ``exec``) to send the child a signal when its parent
dies — even by SIGKILL — so a killed ``inferlab run`` does not leave its server holding the GPU
until the next run reaps it (``campaign.orphans`` still does, for what this cannot cover: ssh
hosts' remote processes, a server that ignores the signal, a reboot). None where it cannot be
done safely: not Linux, or other threads running (a ``preexec_fn`` must not run then).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

__all__ = ["parent_death_hook"]

_PR_SET_PDEATHSIG = 1

try:
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:  # pragma: no cover - a libc without symbols
    _LIBC = None


def parent_death_hook(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """The ``preexec_fn`` that makes the child get ``sig`` when this process dies, or None."""
    libc = _LIBC
    if libc is None or threading.active_count() > 1:
        return None
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent died before the request took: go now
            os._exit(1)

    return hook

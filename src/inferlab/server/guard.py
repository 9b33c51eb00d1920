"""A server's guard: ``python -I …/server/guard.py -- ARGV...`` (``lifecycle.guarded``); it
imports nothing but the standard library, so it runs whatever the server's ``PYTHONPATH``.

It runs ARGV in its own process group (the one ``launch`` started) and asks Linux to signal
it when the process that launched it dies (``PR_SET_PDEATHSIG``). On that signal it kills the
whole group, so a server launched by a Ray actor never outlives the actor, whether the actor
crashed, was killed or lost its raylet. A SIGTERM while the launcher lives is an ordinary stop
(the group got it too): the guard waits for the server and exits with its status.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def _on_parent_death(sig: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, sig)) == 0
    except (OSError, AttributeError):
        return False


def main(argv: list[str]) -> int:
    """Run ``argv`` (after ``--``) guarded; returns its exit status (128 + signal if killed).
    ``--parent PID`` names the launcher: when it died before the guard could ask to be told
    (the guard was already handed to a subreaper), the server is not started at all."""
    parent = os.getppid()
    if argv[:1] == ["--parent"] and len(argv) > 1 and argv[1].isdigit():
        parent, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m inferlab.server.guard [--parent PID] -- ARGV...", file=sys.stderr)
        return 2
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an ignored SIGCHLD is inherited: undo it
    _on_parent_death(signal.SIGTERM)

    def orphaned() -> bool:
        return os.getppid() != parent

    def on_term(signum: int, frame: object) -> None:
        if orphaned():
            os.killpg(0, signal.SIGKILL)  # the launcher is gone: take the server down

    signal.signal(signal.SIGTERM, on_term)  # the server starts with the default (exec resets)
    if orphaned():
        return 1
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

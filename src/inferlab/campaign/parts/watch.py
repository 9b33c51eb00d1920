"""A campaign's watch on its server while a sweep runs: a server that exits mid-run ends the
config's sweep instead of every later point being measured against a dead port."""

from __future__ import annotations

import contextlib
import subprocess
from typing import Any

from inferlab.errors import ConnectError
from inferlab.load.results import BenchWarning, LoadPoint, PointResult
from inferlab.records import ErrorKind
from inferlab.server import ServerProcess

__all__ = ["ServerWatch", "mark_exited"]

_EXIT_WAIT_S = 3.0  # a crashed server's interpreter may take this long to be gone


class ServerWatch:
    """A result sink, placed before the store's: the point during which the server exited is
    marked interrupted (stored with its requests as evidence; ``--resume`` measures it again)
    and the sweep stops there; a server found dead before a point starts is a ``ConnectError``.
    ``exited`` then says what happened."""

    def __init__(self, server: ServerProcess, config: str) -> None:
        self.server = server
        self.config = config
        self.exited: str | None = None

    def _exit_code(self, refused: bool) -> int | None:
        """The server's exit code, None while it runs; after a refused connect, the time a
        dying process takes to exit is waited for."""
        proc = self.server.proc
        if refused and proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_EXIT_WAIT_S)
        return proc.poll()

    def _say(self, code: int, when: str) -> str:
        self.exited = (
            f"{self.config}: the server (pid {self.server.pid}) exited with code {code} {when}; "
            "the points before it are stored, inferlab run --resume measures the rest"
        )
        return self.exited

    def check(self, refused: bool, when: str) -> str | None:
        """None while the server runs, else what happened ``when`` (also in ``exited``);
        ``refused``: a connect was refused, so a dying server is waited for."""
        code = self._exit_code(refused)
        return None if code is None else self._say(code, when)

    def start(self, meta: dict[str, Any]) -> None:
        pass

    def begin(self, point: LoadPoint, trial: int) -> None:
        message = self.check(False, f"before {point.label} trial {trial}")
        if message is not None:
            raise ConnectError(message)

    def point(self, res: PointResult) -> None:
        refused = any(r.error_kind is ErrorKind.CONNECT for r in res.records)
        message = self.check(refused, f"during {res.point.label} trial {res.trial}")
        if message is not None:
            mark_exited(res, message)

    def close(self) -> None:
        pass


def mark_exited(res: PointResult, message: str) -> None:
    """The point during which the server exited: interrupted (``--resume`` measures it again),
    with the warning that says so."""
    res.interrupted = True
    res.warnings.append(
        BenchWarning("server-exited", message, "read the server's log (inferlab logs)")
    )

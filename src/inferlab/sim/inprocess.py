"""The reference engine on a thread of this process, started from its ``sim serve`` argv.

For tests whose subject is not the process (a campaign's verdicts, the store, the report):
``SimThread`` runs what ``inferlab sim serve`` runs (the same startup lines, the same ready
line, the same exit status), its event loop on a daemon thread, listening on loopback, and
stops it when asked, as SIGTERM stops the real one. ``serve_options`` reads the options of a
``sim serve`` command line into the :class:`~inferlab.sim.config.SimConfig` the command builds.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from inferlab.errors import ConfigError
from inferlab.sim.config import SimConfig
from inferlab.sim.launch import LEVER_FIELDS, config_from_options, run_engine
from inferlab.sim.presets import Levers
from inferlab.sim.server import SimServer, serve_until

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["READY_LINE", "SimThread", "serve_config", "serve_options"]

#: what ``inferlab sim serve`` prints once it listens (its ready line), then the base URL
READY_LINE = "inferlab sim (SIMULATED engine) listening on "

#: ``SimConfig`` fields whose option is not ``--`` + the field's name in kebab case
_RENAMED = {"truth_path": "--truth"}
#: drawn at start-up (``sim.launchspread``), not given
_DRAWN = ("launch_factor", "launch_index")
_SIM_FIELDS = tuple(f for f in SimConfig.model_fields if f != "levers" and f not in _DRAWN)


def _option(field: str) -> str:
    return _RENAMED.get(field, "--" + field.replace("_", "-"))


def _is_flag(field: str) -> bool:
    info = Levers.model_fields[field] if field in LEVER_FIELDS else SimConfig.model_fields[field]
    return info.annotation is bool


#: option → (field, takes no value)
OPTIONS = {_option(f): (f, _is_flag(f)) for f in (*_SIM_FIELDS, *LEVER_FIELDS)}


def serve_options(args: Sequence[str]) -> dict[str, JsonValue]:
    """The fields set by the options of a ``sim serve`` command line (``--port 0``,
    ``--ttft-ms=8``, ``--tuned-fp8``); ``ConfigError`` names an option it does not take."""
    out: dict[str, JsonValue] = {}
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name not in OPTIONS:
            raise ConfigError(f"sim serve: no such option {arg!r}")
        field, flag = OPTIONS[name]
        if flag:
            out[field] = True
            continue
        given = value if eq else next(it, None)
        if given is None:
            raise ConfigError(f"sim serve: {name} needs a value")
        out[field] = given
    return out


def serve_config(argv: Sequence[str], env: Mapping[str, str]) -> tuple[SimConfig, str]:
    """The config and the logged command (``sim serve ...``) of a full ``sim serve`` argv
    (``python -m inferlab.cli.main sim serve OPTIONS``); ``env`` gives ``NCCL_PROTO``."""
    words = list(argv)
    at = next((i for i in range(len(words) - 1) if words[i : i + 2] == ["sim", "serve"]), None)
    if at is None:
        raise ConfigError(f"not a 'sim serve' command line: {' '.join(words)[:200]}")
    labels = {f: o for o, (f, _) in OPTIONS.items()}
    labels.update({f"levers.{f}": _option(f) for f in LEVER_FIELDS})
    labels["levers.nccl_proto"] = "NCCL_PROTO"
    options = serve_options(words[at + 2 :])
    return config_from_options(options, env, labels), shlex.join(words[at:])


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class SimThread:
    """``inferlab sim serve`` on a daemon thread of this process. ``pid``, ``poll()``,
    ``wait()`` and ``returncode`` read as a ``Popen``'s (the pid is this process's);
    ``terminate()`` ends it as SIGTERM ends the real one (exit status 0). ``url`` is set once
    it listens; ``server`` is the running :class:`SimServer` (its ground truth)."""

    def __init__(
        self,
        config: SimConfig,
        env: Mapping[str, str],
        command: str,
        log: Callable[[str], None],
    ) -> None:
        self.config = config
        self.env = dict(env)
        self.command = command
        self.log = log
        self.pid = os.getpid()
        self.returncode: int | None = None
        self.url: str | None = None
        self.server: SimServer | None = None
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="inferlab-sim", daemon=True)

    def start(self) -> SimThread:
        self._thread.start()
        return self

    def _ready(self, url: str) -> None:
        self.url = url
        self.log(READY_LINE + url)

    def _main(self) -> None:
        try:
            code = run_engine(
                self.config,
                self.env,
                self.command,
                self.log,
                self._ready,
                serve_with=self._serve,
                sleep=self._stop.wait,
            )
        except Exception:  # a bug: the log says it, as a crashed process's would
            for line in traceback.format_exc().splitlines():
                self.log(line)
            code = 1
        self.returncode = code

    def _serve(
        self, config: SimConfig, on_ready: Callable[[str], None], log: Callable[[str], None] | None
    ) -> bool:
        server = SimServer(config, log=log, env=self.env)  # StartupFailure: exit 1
        self.server = server
        if self._stop.is_set():  # stopped during its startup delay
            return False
        loop = _new_loop()
        self._loop = loop

        async def main() -> bool:
            self._stopped = asyncio.Event()
            if self._stop.is_set():
                self._stopped.set()
            return await serve_until(server, self._stopped, on_ready)

        try:
            return loop.run_until_complete(main())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit status once it has stopped (``subprocess.TimeoutExpired`` after
        ``timeout`` s, as ``Popen.wait``)."""
        self._thread.join(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.command, timeout or 0.0)
        return self.returncode

    def terminate(self) -> None:
        """Stop serving (connections dropped, ground truth flushed), as SIGTERM does."""
        self._stop.set()
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None:
            try:
                loop.call_soon_threadsafe(stopped.set)
            except RuntimeError:  # the loop has already ended
                pass

"""Launch, readiness, stop and drain of one server configuration.

A server runs as a subprocess in its own process group (locally, or through the ``ssh`` client
with a command built by ``shlex`` — never a shell string with config values pasted in), logging
to one file per launch, with the config's environment on top of a clean base. Readiness polls
the health path until a deadline and fails fast when the process exits or a fatal log signature
appears. Stop sends SIGTERM to the group, SIGKILL after a grace period, then waits until the port
is free and, where NVML sees a GPU, until the memory the server held is released.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from inferlab.config.hosts import is_local_host
from inferlab.cpus import pin_child
from inferlab.errors import LaunchError
from inferlab.secrets import scrub_text
from inferlab.server.stop import StopReport, signal_group, stop_group

__all__ = [
    "BASE_ENV_KEYS",
    "FatalCheck",
    "LaunchSpec",
    "Proc",
    "ServerProcess",
    "clean_env",
    "free_port",
    "guarded",
    "launch",
    "log_tail",
    "stop",
    "wait_ready",
]

#: what a launched server inherits from inferlab's environment; everything else comes from
#: the config (``env``), so two configs differ only in what they say.
BASE_ENV_KEYS = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "TERM",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "HF_HOME",
    "HF_HUB_OFFLINE",
    "XDG_CACHE_HOME",
    "SSH_AUTH_SOCK",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The clean base (``BASE_ENV_KEYS`` present here) with ``extra`` on top."""
    env = {k: os.environ[k] for k in BASE_ENV_KEYS if k in os.environ}
    env.update(extra or {})
    return env


def guarded(argv: Sequence[str], python: str | None = None) -> list[str]:
    """``argv`` run under ``inferlab.server.guard`` (it dies with the process that starts it),
    a stdlib-only file run isolated (``-I``): the server's own ``PYTHONPATH`` need not reach us."""
    guard = [python or sys.executable, "-I", str(Path(__file__).with_name("guard.py"))]
    return [*guard, "--parent", str(os.getpid()), "--", *argv]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one server."""

    name: str
    argv: list[str]
    env: dict[str, str]  # the config's env; the clean base is added at launch
    port: int
    log_path: Path
    health_url: str
    host: str = "local"  # or an ssh target
    ready_timeout_s: float = 900.0
    stop_grace_s: float = 20.0
    cpus: tuple[int, ...] | None = None  # local: pinned before exec; its whole group inherits it
    guard: bool = False  # local: killed with its launcher (``inferlab.server.guard``)


class Proc(Protocol):
    """What is used of a launched server's process: a ``Popen``, or a stand-in with its
    ``pid``, ``returncode``, ``poll()``, ``wait(timeout)`` and ``terminate()`` (an in-process
    server)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def terminate(self) -> None: ...


@dataclass
class ServerProcess:
    spec: LaunchSpec
    proc: Proc
    started: float  # time.monotonic() at launch
    ready_s: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return self.spec.health_url.rsplit("/", 1)[0] if "/" in self.spec.health_url else ""


def _command(spec: LaunchSpec) -> tuple[list[str], dict[str, str]]:
    if is_local_host(spec.host):
        return (guarded(spec.argv) if spec.guard else list(spec.argv)), clean_env(spec.env)
    # remote: ssh with one argv; the remote command is shlex-joined (quoted), never pasted.
    # -tt gives the remote command a terminal, so it gets SIGHUP when ssh goes away.
    remote = shlex.join(["env", *(f"{k}={v}" for k, v in spec.env.items()), *spec.argv])
    argv = ["ssh", "-tt", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", spec.host, remote]
    return argv, clean_env()


def launch(spec: LaunchSpec) -> ServerProcess:
    """Start the server in a new process group, its output appended to ``spec.log_path``."""
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    argv, env = _command(spec)
    with spec.log_path.open("ab") as log:
        log.write(f"# inferlab launch {spec.name}: {scrub_text(shlex.join(argv))}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=pin_child(spec.cpus) if argv[0] != "ssh" else None,
            )
        except OSError as exc:
            raise LaunchError(
                f"{spec.name}: cannot start {argv[0]!r}: {exc.strerror or exc}",
                kind="not-startable",
                log_path=spec.log_path,
            ) from None
    return ServerProcess(spec, proc, time.monotonic())


def log_tail(path: Path, lines: int = 40) -> list[str]:
    """The last ``lines`` lines of a log file (decoded leniently)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            data = f.read()
    except OSError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()[-lines:]


def _healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return bool(200 <= r.status < 300)
    except (urllib.error.URLError, OSError, ValueError):
        return False


FatalCheck = Callable[[Sequence[str]], "tuple[str, str, str] | None"]


def wait_ready(
    server: ServerProcess,
    *,
    fatal: FatalCheck | None = None,
    poll_s: float = 0.5,
    on_tick: Callable[[float], None] | None = None,
    kill: Callable[[ServerProcess], None] | None = None,
) -> float:
    """Poll health until ready; returns seconds to ready. Raises ``LaunchError`` (classified,
    with the log tail and a remedy) when the process exits, a fatal log line appears, or the
    deadline passes. ``fatal(lines)`` returns ``(kind, matched line, remedy)`` or None;
    ``kill`` ends a server that will not come up (default: SIGKILL to its process group)."""
    kill = kill or _kill_group
    spec = server.spec
    deadline = server.started + spec.ready_timeout_s
    seen = 0
    while True:
        elapsed = time.monotonic() - server.started
        if on_tick is not None:
            on_tick(elapsed)
        if _healthy(spec.health_url):
            server.ready_s = elapsed
            return elapsed
        lines = log_tail(spec.log_path, 400)
        if fatal is not None and len(lines) != seen:
            seen = len(lines)
            hit = fatal(lines)
            if hit is not None:
                kind, line, remedy = hit
                kill(server)
                raise _launch_error(spec, f"{kind}: {line.strip()}", kind, remedy)
        code = server.proc.poll()
        if code is not None:
            raise _exited(spec, code, fatal)
        if time.monotonic() > deadline:
            kill(server)
            raise _launch_error(
                spec,
                f"not ready after {spec.ready_timeout_s:g} s "
                f"({spec.health_url} never answered 200)",
                "ready-timeout",
                "raise engine.ready_timeout_s if the model is large; else read the log",
            )
        time.sleep(poll_s)


def _launch_error(spec: LaunchSpec, what: str, kind: str, remedy: str) -> LaunchError:
    return LaunchError(
        f"{spec.name}: {what}",
        kind=kind,
        remedy=remedy,
        log_path=spec.log_path,
        tail=log_tail(spec.log_path),
    )


def _exited(spec: LaunchSpec, code: int, fatal: FatalCheck | None) -> LaunchError:
    """The error of a server that exited before it was ready: ssh's own failure, the fatal
    log signature that explains it, or the bare exit code."""
    ssh = _ssh_failure(spec, log_tail(spec.log_path, 20), code)
    if ssh is not None:
        remedy = (
            "check the host name, that sshd runs there and that "
            "key-based login works (ssh -o BatchMode=yes HOST true)"
        )
        return _launch_error(spec, ssh, "ssh", remedy)
    kind, remedy = "exited", "read the log tail"
    if fatal is not None:
        hit = fatal(log_tail(spec.log_path, 2000))
        if hit is not None:
            kind, _, remedy = hit
    return _launch_error(
        spec, f"the server exited with code {code} before it was ready", kind, remedy
    )


def _ssh_failure(spec: LaunchSpec, lines: Sequence[str], code: int) -> str | None:
    """ssh exits 255 for its own errors (refused, unknown host, auth, bad option)."""
    if is_local_host(spec.host) or code != 255:
        return None
    msg = next(
        (ln.strip() for ln in reversed(lines) if ln.strip() and not ln.startswith("#")),
        "no message",
    )
    return f"ssh to {spec.host} failed: {msg}"


def _kill_group(server: ServerProcess) -> None:
    """SIGKILL the server's group and reap its leader (no zombie, no unwaited handle)."""
    signal_group(server.proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.proc.wait(10)


def stop(server: ServerProcess, *, drain_timeout_s: float = 60.0) -> StopReport:
    """SIGTERM the group, SIGKILL after the grace period; wait for the port and GPU memory."""
    rep = stop_group(
        server.proc.pid,
        server.spec.port,
        host=server.spec.host,
        grace_s=server.spec.stop_grace_s,
        drain_timeout_s=drain_timeout_s,
        reap=server.proc.poll,
        cuda_visible=server.spec.env.get(
            "CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")
        ),
    )
    rep.exit_code = server.proc.returncode
    return rep

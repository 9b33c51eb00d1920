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
from dataclasses import dataclass, field
from pathlib import Path

from inferlab.config.secrets import scrub_text
from inferlab.cpus import pin_child
from inferlab.errors import LaunchError
from inferlab.server.gpumem import pids_mib

__all__ = [
    "BASE_ENV_KEYS",
    "LaunchSpec",
    "ServerProcess",
    "StopReport",
    "clean_env",
    "free_port",
    "guarded",
    "launch",
    "log_tail",
    "stop",
    "stop_group",
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


@dataclass
class ServerProcess:
    spec: LaunchSpec
    proc: subprocess.Popen[bytes]
    started: float  # time.monotonic() at launch
    ready_s: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return self.spec.health_url.rsplit("/", 1)[0] if "/" in self.spec.health_url else ""


@dataclass
class StopReport:
    """How the server stopped and what was checked afterwards."""

    signal: str  # "SIGTERM", "SIGKILL" or "already exited"
    exit_code: int | None
    seconds: float
    port_free: bool
    gpu_check: str  # "drained", "skipped: ...", or what is still held
    notes: list[str] = field(default_factory=list)


def _command(spec: LaunchSpec) -> tuple[list[str], dict[str, str]]:
    if spec.host in ("local", "localhost", ""):
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
) -> float:
    """Poll health until ready; returns seconds to ready. Raises ``LaunchError`` (classified,
    with the log tail and a remedy) when the process exits, a fatal log line appears, or the
    deadline passes. ``fatal(lines)`` returns ``(kind, matched line, remedy)`` or None."""
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
                _kill_group(server, signal.SIGKILL)
                raise LaunchError(
                    f"{spec.name}: {kind}: {line.strip()}",
                    kind=kind,
                    remedy=remedy,
                    log_path=spec.log_path,
                    tail=log_tail(spec.log_path),
                )
        code = server.proc.poll()
        if code is not None:
            kind, remedy = "exited", "read the log tail"
            ssh = _ssh_failure(spec, log_tail(spec.log_path, 20), code)
            if ssh is not None:
                raise LaunchError(
                    f"{spec.name}: {ssh}",
                    kind="ssh",
                    log_path=spec.log_path,
                    remedy="check the host name, that sshd runs there and that "
                    "key-based login works (ssh -o BatchMode=yes HOST true)",
                    tail=log_tail(spec.log_path),
                )
            if fatal is not None:
                hit = fatal(log_tail(spec.log_path, 2000))
                if hit is not None:
                    kind, _, remedy = hit
            raise LaunchError(
                f"{spec.name}: the server exited with code {code} before it was ready",
                kind=kind,
                remedy=remedy,
                log_path=spec.log_path,
                tail=log_tail(spec.log_path),
            )
        if time.monotonic() > deadline:
            _kill_group(server, signal.SIGKILL)
            raise LaunchError(
                f"{spec.name}: not ready after {spec.ready_timeout_s:g} s "
                f"({spec.health_url} never answered 200)",
                kind="ready-timeout",
                remedy="raise engine.ready_timeout_s if the model is large; else read the log",
                log_path=spec.log_path,
                tail=log_tail(spec.log_path),
            )
        time.sleep(poll_s)


def _ssh_failure(spec: LaunchSpec, lines: Sequence[str], code: int) -> str | None:
    """ssh exits 255 for its own errors (refused, unknown host, auth, bad option)."""
    if spec.host in ("local", "localhost", "") or code != 255:
        return None
    msg = next(
        (ln.strip() for ln in reversed(lines) if ln.strip() and not ln.startswith("#")),
        "no message",
    )
    return f"ssh to {spec.host} failed: {msg}"


def _kill_group(server: ServerProcess, sig: int) -> None:
    _signal_group(server.proc.pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) != 0


def _group_pids(pgid: int) -> set[int]:
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getpgid(int(d.name)) == pgid:
                    pids.add(int(d.name))
            except (ProcessLookupError, PermissionError):
                continue
    return pids


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (works for processes we did not start)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


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


def stop_group(
    pgid: int,
    port: int,
    *,
    host: str = "local",
    grace_s: float = 20.0,
    drain_timeout_s: float = 60.0,
    reap: Callable[[], int | None] | None = None,
    cuda_visible: str | None = None,
) -> StopReport:
    """Stop the process group ``pgid`` (a server started by ``launch``, maybe by another
    inferlab process): SIGTERM, SIGKILL after ``grace_s``; then the port check, and the GPU
    check on the devices ``cuda_visible`` (its ``CUDA_VISIBLE_DEVICES``; None: every GPU)."""
    t0 = time.monotonic()
    notes: list[str] = []

    def alive() -> bool:
        if reap is not None:
            return reap() is None
        return _alive(pgid)

    pids = _group_pids(pgid) | {pgid}
    if not alive():
        sent = "already exited"
    else:
        sent = "SIGTERM"
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive():
            sent = "SIGKILL"
            notes.append(f"ignored SIGTERM for {grace_s:g} s: killed")
            _signal_group(pgid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while alive() and time.monotonic() < deadline:
                time.sleep(0.05)
    # stragglers of the group (workers that outlive the parent)
    deadline = time.monotonic() + 10
    while _group_pids(pgid) and time.monotonic() < deadline:
        _signal_group(pgid, signal.SIGKILL)
        time.sleep(0.1)
    port_free = False
    deadline = time.monotonic() + drain_timeout_s
    while time.monotonic() < deadline:
        if host not in ("local", "localhost", "") or _port_free(port):
            port_free = True
            break
        time.sleep(0.2)
    if not port_free:
        notes.append(f"port {port} still in use after {drain_timeout_s:g} s")
    gpu = _wait_pids_gone(pids, deadline, cuda_visible)
    if gpu.startswith("not drained"):
        notes.append(gpu)
    return StopReport(sent, None, time.monotonic() - t0, port_free, gpu, notes)


def _wait_pids_gone(pids: set[int], deadline: float, cuda_visible: str | None = None) -> str:
    """Wait until NVML lists none of ``pids`` on the GPUs ``cuda_visible`` names (None: any):
    "drained", "not drained: ..." or "skipped: ..." (no NVML)."""
    if pids_mib(cuda_visible) is None:
        return "skipped: no GPU visible through NVML"
    while True:
        left = {p: m for p, m in (pids_mib(cuda_visible) or {}).items() if p in pids}
        if not left:
            return "drained"
        if time.monotonic() > deadline:
            return f"not drained: {sum(left.values())} MiB still held by pids {sorted(left)}"
        time.sleep(0.5)

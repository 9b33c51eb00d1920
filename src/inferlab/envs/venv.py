"""What the cached environments inferlab builds share (stdlib only): where they live, their
python, one builder at a time, a logged command, a size, and the marker written last that says
a build is complete (``ensure_venv``: ``start_venv`` … ``finish_venv``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MARKER_NAME",
    "Recipe",
    "build_lock",
    "cache_root",
    "dir_size",
    "ensure_venv",
    "finish_venv",
    "marker_matches",
    "run_logged",
    "start_venv",
    "venv_python",
]

#: the file a finished build writes last in its environment (its pins, time and size)
MARKER_NAME = "inferlab-ready.json"


def cache_root() -> Path:
    """``$INFERLAB_CACHE`` or ``~/.cache/inferlab``."""
    env = os.environ.get("INFERLAB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "inferlab"


def venv_python(venv: Path) -> Path:
    """The python of the virtual environment at ``venv``."""
    return venv / "bin" / "python"


def run_logged(
    argv: Sequence[str], log: Callable[[str], object], env: dict[str, str] | None = None
) -> str:
    """Run ``argv``, its command line told to ``log``; its output (``RuntimeError`` with the
    last 40 lines when it fails)."""
    log("$ " + " ".join(argv))
    proc = subprocess.run(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-40:])
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(argv)}\n{tail}")
    return proc.stdout


@contextlib.contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """One builder at a time (parallel test workers share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def dir_size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (links not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def marker_matches(venv: Path, pins: Mapping[str, str]) -> bool:
    """Whether the environment at ``venv`` is complete: its python is there and its marker
    names these ``pins`` (field → version)."""
    marker = venv / MARKER_NAME
    if not marker.is_file() or not venv_python(venv).exists():
        return False
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return all(data.get(k) == v for k, v in pins.items())


def ensure_venv(venv: Path, pins: Mapping[str, str], build: Callable[[], Path]) -> Path:
    """The python of the environment at ``venv``, ``build`` run first (one builder at a time)
    unless its marker names ``pins``."""
    if marker_matches(venv, pins):
        return venv_python(venv)
    with build_lock(venv.parent / f".{venv.name}.lock"):
        if marker_matches(venv, pins):  # another process built it while we waited
            return venv_python(venv)
        return build()


def start_venv(
    venv: Path, base: str, what: str, log: Callable[[str], object]
) -> tuple[str, dict[str, str], float]:
    """A new virtual environment at ``venv`` (an incomplete one removed first) made by the
    python ``base``: its python, the environment to run pip in, and when it started
    (``time.monotonic``, s)."""
    if venv.exists():
        log(f"incomplete {what} environment at {venv}; rebuilding")
        shutil.rmtree(venv)
    t0 = time.monotonic()
    run_logged([base, "-m", "venv", str(venv)], log)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return str(venv_python(venv)), env, t0


def finish_venv(venv: Path, pins: Mapping[str, str], t0: float) -> tuple[float, int]:
    """Write the marker that completes the build started at ``t0``: its seconds and bytes."""
    seconds = time.monotonic() - t0
    size = dir_size(venv)
    marker = {
        **pins,
        "install_seconds": round(seconds, 1),
        "venv_bytes": size,
        "python": sys.version.split()[0],
    }
    (venv / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n")
    return seconds, size


#: what a recipe's install step gets: the fresh venv's directory, the environment to run pip in,
#: the version asked for and the log; it returns the line its import check printed
Install = Callable[[Path, dict[str, str], str, Callable[[str], object]], str]


@dataclass(frozen=True)
class Recipe:
    """One cached environment: ``<cache>/<prefix>-<version>/``, complete when its marker names
    ``pins(version)``; ``install`` fills a fresh venv (``what`` names it in the log)."""

    prefix: str
    what: str
    pins: Callable[[str], dict[str, str]]
    install: Install

    def venv_dir(self, version: str) -> Path:
        return cache_root() / f"{self.prefix}-{version}"

    def cached(self, version: str) -> Path | None:
        """The python of the built environment, or None (not built, or incomplete)."""
        venv = self.venv_dir(version)
        return venv_python(venv) if marker_matches(venv, self.pins(version)) else None

    def ensure(
        self, version: str, log: Callable[[str], object], base_python: str | None = None
    ) -> Path:
        """The python of a working environment, built first when missing or incomplete."""
        venv = self.venv_dir(version)
        return ensure_venv(
            venv, self.pins(version), lambda: self._build(venv, version, log, base_python)
        )

    def _build(
        self, venv: Path, version: str, log: Callable[[str], object], base_python: str | None
    ) -> Path:
        base = base_python or getattr(sys, "_base_executable", None) or sys.executable
        _py, env, t0 = start_venv(venv, base, self.what, log)
        log(self.install(venv, env, version, log))
        seconds, size = finish_venv(venv, self.pins(version), t0)
        log(f"{self.what} environment ready in {seconds:.0f} s ({_size(size)}): {venv}")
        return venv_python(venv)


def _size(nbytes: int) -> str:
    """``763 MiB`` under a GiB, ``4.12 GiB`` from there."""
    return f"{nbytes / 2**20:.0f} MiB" if nbytes < 2**30 else f"{nbytes / 2**30:.2f} GiB"

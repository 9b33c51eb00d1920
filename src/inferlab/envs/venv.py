"""What the cached environments inferlab builds share (stdlib only): where they live, their
python, one builder at a time, a logged command and a size."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

__all__ = ["build_lock", "cache_root", "dir_size", "run_logged", "venv_python"]


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

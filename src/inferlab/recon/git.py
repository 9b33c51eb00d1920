"""An engine's git checkout: commit, date, branch, and how far it is behind its upstream.

Only ``git`` subprocesses; nothing touches the network unless ``fetch=True`` (then one
``git fetch`` of the upstream's remote). Without a fetch, "behind" is as of the last fetch,
whose time (``FETCH_HEAD``'s mtime) is reported."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from inferlab.errors import ConfigError
from inferlab.recon.probe import run_captured

__all__ = ["RepoInfo", "is_tracked_package", "repo_info"]


@dataclass
class RepoInfo:
    """A checkout's state. ``behind`` / ``ahead`` count commits versus ``upstream``
    (``None`` without an upstream); ``fetched`` says whether this call fetched."""

    path: str
    commit: str
    commit_date: str
    subject: str
    branch: str | None
    describe: str | None
    dirty: bool
    upstream: str | None = None
    behind: int | None = None
    ahead: int | None = None
    fetched: bool = False
    last_fetch: str | None = None
    errors: list[str] = field(default_factory=list)


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    return env


def _git(repo: Path, *args: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
    return run_captured(["git", "-C", str(repo), *args], timeout_s, _git_env())


def _out(repo: Path, *args: str) -> str | None:
    p = _git(repo, *args)
    return p.stdout.strip() if p.returncode == 0 else None


def is_tracked_package(package_dir: Path) -> Path | None:
    """The top of the git checkout that tracks ``package_dir/__init__.py`` (an editable
    install from source), else ``None`` (a venv that merely sits inside some checkout)."""
    if shutil.which("git") is None or not (package_dir / "__init__.py").is_file():
        return None
    try:
        p = _git(package_dir, "ls-files", "--error-unmatch", "__init__.py", timeout_s=10)
        if p.returncode != 0:
            return None
        top = _out(package_dir, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(top) if top else None


def repo_info(path: str | Path, *, fetch: bool = False, fetch_timeout_s: float = 60.0) -> RepoInfo:
    """The checkout at ``path``. Raises ``ConfigError`` naming ``--repo`` when it is not a git
    checkout (or git is missing); a failed fetch is recorded in ``errors``."""
    repo = Path(path)
    if shutil.which("git") is None:
        raise ConfigError("--repo: git is not installed (not found on PATH)")
    if not repo.is_dir():
        raise ConfigError(f"--repo: {repo} is not a directory")
    top = _git(repo, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        msg = (top.stderr.strip().splitlines() or ["not a git repository"])[-1]
        raise ConfigError(f"--repo: {repo} is not a git checkout ({msg})")
    head = _git(repo, "log", "-1", "--format=%H%x00%cI%x00%s")
    if head.returncode != 0:
        raise ConfigError(f"--repo: {repo} has no commits")
    commit, date, subject = head.stdout.strip().split("\x00", 2)
    info = RepoInfo(
        path=top.stdout.strip(),
        commit=commit,
        commit_date=date,
        subject=subject,
        branch=_out(repo, "symbolic-ref", "--short", "-q", "HEAD"),
        describe=_out(repo, "describe", "--tags", "--always", "--dirty"),
        dirty=bool(_out(repo, "status", "--porcelain", "--untracked-files=no")),
        upstream=_out(repo, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"),
    )
    if info.upstream is None:
        info.errors.append("no upstream tracking branch: commits behind cannot be counted")
        return info
    if fetch:
        remote = _out(repo, "config", f"branch.{info.branch}.remote") if info.branch else None
        try:
            p = _git(repo, "fetch", "--quiet", remote or "origin", timeout_s=fetch_timeout_s)
            if p.returncode == 0:
                info.fetched = True
            else:
                info.errors.append(f"git fetch failed: {p.stderr.strip()[-300:]}")
        except subprocess.TimeoutExpired:
            info.errors.append(f"git fetch took over {fetch_timeout_s:.0f} s: abandoned")
    fetch_head = _out(repo, "rev-parse", "--git-path", "FETCH_HEAD")
    if fetch_head:
        fh = Path(fetch_head) if Path(fetch_head).is_absolute() else repo / fetch_head
        if fh.exists():
            info.last_fetch = (
                dt.datetime.fromtimestamp(fh.stat().st_mtime)
                .astimezone()
                .isoformat(timespec="seconds")
            )
    counts = _out(repo, "rev-list", "--left-right", "--count", "HEAD...@{upstream}")
    if counts:
        ahead, behind = (int(x) for x in counts.split())
        info.ahead, info.behind = ahead, behind
    return info

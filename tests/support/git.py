"""Test helper: real git repositories (git subprocesses), for recon's checkouts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` in ``cwd`` (a fixed author), its stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit(repo: Path, name: str) -> str:
    """A commit adding the file ``name``; its sha."""
    (repo / name).write_text(name + "\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


def make_checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A bare "upstream", a clone of it (the checkout), and a second clone that pushes two
    more commits upstream after the checkout was cloned."""
    upstream = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(upstream))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(upstream), str(seed))
    git(seed, "checkout", "-q", "-b", "main")
    commit(seed, "a")
    git(seed, "push", "-q", "origin", "main")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    commit(seed, "b")
    commit(seed, "c")
    git(seed, "push", "-q", "origin", "main")
    return upstream, work

"""Git checkouts (``recon.git``, real git subprocesses): commits behind, no network without
``--fetch``, an engine package recognised only when tracked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferlab.recon.git import repo_info
from support.git import commit, git, make_checkout

# -- git -------------------------------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, Path]:
    """(upstream, checkout): the checkout two commits behind (``support.git.make_checkout``)."""
    return make_checkout(tmp_path)


def test_commits_behind_need_a_fetch(checkout: tuple[Path, Path]) -> None:
    upstream, work = checkout
    head = git(work, "rev-parse", "HEAD")
    before = set(os.listdir(work / ".git"))
    info = repo_info(work)
    assert info.commit == head and info.branch == "main" and info.upstream == "origin/main"
    assert info.behind == 0 and info.ahead == 0 and not info.fetched and not info.dirty
    assert info.subject == "add a"
    # no fetch happened: nothing new in .git (a fetch writes FETCH_HEAD), refs unchanged
    assert set(os.listdir(work / ".git")) == before and "FETCH_HEAD" not in before
    assert git(work, "rev-parse", "origin/main") == head

    fetched = repo_info(work, fetch=True)
    assert fetched.fetched and fetched.behind == 2 and fetched.ahead == 0
    assert fetched.last_fetch is not None and fetched.errors == []
    commit(work, "local")
    (work / "a").write_text("changed\n")
    again = repo_info(work)
    assert again.behind == 2 and again.ahead == 1 and again.dirty and not again.fetched


def test_no_network_without_fetch_and_a_failed_fetch_is_recorded(
    checkout: tuple[Path, Path], tmp_path: Path
) -> None:
    _, work = checkout
    git(work, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    quiet = repo_info(work)  # the remote is unreachable, but nothing tries to reach it
    assert quiet.errors == [] and quiet.behind == 0
    loud = repo_info(work, fetch=True)
    assert not loud.fetched and loud.behind == 0
    assert len(loud.errors) == 1 and loud.errors[0].startswith("git fetch failed")


def test_engine_package_in_a_checkout_is_recognised_only_when_tracked(tmp_path: Path) -> None:
    from inferlab.recon.git import is_tracked_package

    repo = tmp_path / "sglang-src"
    (repo / "python" / "sglang").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "python" / "sglang" / "__init__.py").write_text("")
    assert is_tracked_package(repo / "python" / "sglang") is None  # not committed yet
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "sglang")
    assert is_tracked_package(repo / "python" / "sglang") == repo.resolve()
    venv_pkg = repo / ".venv" / "site-packages" / "vllm"  # a venv that sits in a checkout
    venv_pkg.mkdir(parents=True)
    (venv_pkg / "__init__.py").write_text("")
    assert is_tracked_package(venv_pkg) is None

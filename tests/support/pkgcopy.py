"""Test helper: inferlab installed in a Python of its own, so an engine package directory (the
reference engine's ``inferlab/sim/configs/``) can be changed and restored without touching the
checkout. A real virtual environment (``python -m venv``) with a copy of the package in its
site-packages and this environment's dependencies on its path."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import inferlab
from inferlab.tune.config import DEFAULT_SGLANG
from inferlab.tune.files import write_config_file


def isolated_inferlab(root: Path) -> Path:
    """A Python under ``root`` that imports its own copy of inferlab; returns its path."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    shutil.copytree(
        Path(inferlab.__file__).parent,
        site / "inferlab",
        ignore=shutil.ignore_patterns("__pycache__", "configs"),
    )
    deps = Path(sysconfig.get_paths()["purelib"])
    (site / "zz_inferlab_deps.pth").write_text(f"{deps}\n")
    return venv / "bin" / "python"


def sim_configs(python: Path) -> Path:
    """The reference engine's kernel-config directory of that Python's inferlab."""
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    return site / "inferlab" / "sim" / "configs"


def tuned_dir(path: Path, shapes: tuple[tuple[int, int], ...], device: str) -> Path:
    """SGLang-named files for ``shapes`` (the engines' default tiles), written by the tuner's
    own writer."""
    for n, k in shapes:
        write_config_file(path, "sglang", n, k, device, {1: DEFAULT_SGLANG, 64: DEFAULT_SGLANG})
    return path

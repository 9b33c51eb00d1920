"""Build (once) and find the cached lm-evaluation-harness environment the ``[verify] eval`` gate
runs in when inferlab's own Python lacks the ``inferlab[eval]`` extra (docs/verify.md).

``ensure_lm_eval()`` creates a virtual environment under
``~/.cache/inferlab/lm-eval-<VERSION>/`` the first time (and whenever it is incomplete) with
``lm-eval[api]`` (the API models' ``aiohttp``/``requests``/``tenacity``; no torch: lm-eval's
hard dependencies do not include it, and the API path never imports it), checks that the
``local-completions`` model imports, and writes a marker file last. Run it as a script to build
the environment and print its python. Measured here: 2 min 13 s on a loaded 2-CPU machine from
the local index, 763 MiB.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from inferlab.envs.venv import build_lock, cache_root, dir_size, run_logged, venv_python

__all__ = ["LM_EVAL_VERSION", "cached_python", "ensure_lm_eval", "venv_dir"]

LM_EVAL_VERSION = "0.4.13"
MARKER_NAME = "inferlab-ready.json"
_CHECK = (
    "import sys, lm_eval, lm_eval.models.openai_completions; "
    "assert 'torch' not in sys.modules; print(lm_eval.__version__)"
)


def venv_dir(version: str = LM_EVAL_VERSION) -> Path:
    return cache_root() / f"lm-eval-{version}"


def _marker_ok(venv: Path, version: str) -> bool:
    marker = venv / MARKER_NAME
    if not marker.is_file() or not venv_python(venv).exists():
        return False
    try:
        return bool(json.loads(marker.read_text()).get("lm_eval") == version)
    except (OSError, ValueError):
        return False


def cached_python(version: str = LM_EVAL_VERSION) -> Path | None:
    """The python of the built environment, or None (not built, or incomplete)."""
    venv = venv_dir(version)
    return venv_python(venv) if _marker_ok(venv, version) else None


def ensure_lm_eval(log: Callable[[str], object] = print, version: str = LM_EVAL_VERSION) -> Path:
    """Return the python of a working lm-eval venv, building it when missing or incomplete."""
    venv = venv_dir(version)
    if _marker_ok(venv, version):
        return venv_python(venv)
    with build_lock(venv.parent / f".lm-eval-{version}.lock"):
        if _marker_ok(venv, version):  # another process built it while we waited
            return venv_python(venv)
        return _build(venv, version, log)


def _build(venv: Path, version: str, log: Callable[[str], object]) -> Path:
    if venv.exists():
        log(f"incomplete lm-eval environment at {venv}; rebuilding")
        shutil.rmtree(venv)
    t0 = time.monotonic()
    base = getattr(sys, "_base_executable", None) or sys.executable
    run_logged([base, "-m", "venv", str(venv)], log)
    py = str(venv_python(venv))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [py, "-m", "pip", "install", "--no-input", "-q"]
    run_logged([*pip, f"lm-eval[api]=={version}"], log, env)
    out = run_logged([py, "-c", _CHECK], log, env)
    log("import lm_eval: " + out.strip().splitlines()[-1])
    seconds = time.monotonic() - t0
    size = dir_size(venv)
    marker = {
        "lm_eval": version,
        "install_seconds": round(seconds, 1),
        "venv_bytes": size,
        "python": sys.version.split()[0],
    }
    (venv / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n")
    log(f"lm-eval environment ready in {seconds:.0f} s ({size / 2**20:.0f} MiB): {venv}")
    return venv_python(venv)


if __name__ == "__main__":
    print(ensure_lm_eval())

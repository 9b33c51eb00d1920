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

import sys
from collections.abc import Callable
from pathlib import Path

from inferlab.envs.venv import (
    cache_root,
    ensure_venv,
    finish_venv,
    marker_matches,
    run_logged,
    start_venv,
    venv_python,
)

__all__ = ["LM_EVAL_VERSION", "cached_python", "ensure_lm_eval", "venv_dir"]

LM_EVAL_VERSION = "0.4.13"
_CHECK = (
    "import sys, lm_eval, lm_eval.models.openai_completions; "
    "assert 'torch' not in sys.modules; print(lm_eval.__version__)"
)


def venv_dir(version: str = LM_EVAL_VERSION) -> Path:
    return cache_root() / f"lm-eval-{version}"


def _pins(version: str) -> dict[str, str]:
    return {"lm_eval": version}


def cached_python(version: str = LM_EVAL_VERSION) -> Path | None:
    """The python of the built environment, or None (not built, or incomplete)."""
    venv = venv_dir(version)
    return venv_python(venv) if marker_matches(venv, _pins(version)) else None


def ensure_lm_eval(log: Callable[[str], object] = print, version: str = LM_EVAL_VERSION) -> Path:
    """Return the python of a working lm-eval venv, building it when missing or incomplete."""
    venv = venv_dir(version)
    return ensure_venv(venv, _pins(version), lambda: _build(venv, version, log))


def _build(venv: Path, version: str, log: Callable[[str], object]) -> Path:
    base = getattr(sys, "_base_executable", None) or sys.executable
    py, env, t0 = start_venv(venv, base, "lm-eval", log)
    pip = [py, "-m", "pip", "install", "--no-input", "-q"]
    run_logged([*pip, f"lm-eval[api]=={version}"], log, env)
    out = run_logged([py, "-c", _CHECK], log, env)
    log("import lm_eval: " + out.strip().splitlines()[-1])
    seconds, size = finish_venv(venv, _pins(version), t0)
    log(f"lm-eval environment ready in {seconds:.0f} s ({size / 2**20:.0f} MiB): {venv}")
    return venv_python(venv)


if __name__ == "__main__":
    print(ensure_lm_eval())

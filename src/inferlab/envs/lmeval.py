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

from collections.abc import Callable
from pathlib import Path

from inferlab.envs.venv import Recipe, run_logged, venv_python

__all__ = ["LM_EVAL", "LM_EVAL_VERSION", "cached_python", "ensure_lm_eval"]

LM_EVAL_VERSION = "0.4.13"
_CHECK = (
    "import sys, lm_eval, lm_eval.models.openai_completions; "
    "assert 'torch' not in sys.modules; print(lm_eval.__version__)"
)


def _pins(version: str) -> dict[str, str]:
    return {"lm_eval": version}


def _install(venv: Path, env: dict[str, str], version: str, log: Callable[[str], object]) -> str:
    py = str(venv_python(venv))
    run_logged(
        [py, "-m", "pip", "install", "--no-input", "-q", f"lm-eval[api]=={version}"], log, env
    )
    out = run_logged([py, "-c", _CHECK], log, env)
    return "import lm_eval: " + out.strip().splitlines()[-1]


LM_EVAL = Recipe("lm-eval", "lm-eval", _pins, _install)


def cached_python(version: str = LM_EVAL_VERSION) -> Path | None:
    """The python of the built environment, or None (not built, or incomplete)."""
    return LM_EVAL.cached(version)


def ensure_lm_eval(log: Callable[[str], object] = print, version: str = LM_EVAL_VERSION) -> Path:
    """Return the python of a working lm-eval venv, building it when missing or incomplete."""
    return LM_EVAL.ensure(version, log)


if __name__ == "__main__":
    print(ensure_lm_eval())

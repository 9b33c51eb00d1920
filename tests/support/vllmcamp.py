"""The head of a campaign file against the real vLLM CPU build serving the tiny model: the
``[campaign]`` and ``[engine]`` sections the vLLM tests share (their configs follow)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

#: variables of the cached vLLM environment a launched server keeps
KEEP = ("VLLM_", "HF_", "TRANSFORMERS_", "DO_NOT", "TOKENIZERS", "PYTHONUN")


def kept_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(KEEP)}


#: the model runs in the engine-core process, not in a worker process of its own: a launch is
#: one Python process (torch, vLLM imported) fewer, ~22 s instead of ~31 s on 2 CPUs (vLLM 0.32)
ONE_PROCESS_FEWER = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def campaign_head(name: str, out: Path, python: Path, model: Path, env: Mapping[str, str]) -> str:
    """TOML for ``[campaign]`` (name, output) and ``[engine]`` (vLLM, module launcher, the
    tiny model in float32, eager, the uni-process executor, ``env`` as given)."""
    env = {**env, **ONE_PROCESS_FEWER}
    return f"""
[campaign]
name = "{name}"
output = "{out}"

[engine]
kind = "vllm"
launcher = "module"
python = "{python}"
model = "{model}"
args = ["--served-model-name", "tiny", "--dtype", "float32", "--max-model-len", "2048",
        "--enforce-eager", "--distributed-executor-backend", "uni"]
env = {json.dumps(dict(env)).replace('":', '" =')}
ready_timeout_s = 300
stop_grace_s = 30
"""

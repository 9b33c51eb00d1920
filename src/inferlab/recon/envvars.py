"""Environment variables that change how a multi-GPU engine runs, grouped; secrets redacted."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from inferlab.secrets import scrub_env

__all__ = ["ENV_GROUPS", "env_in_effect"]

#: group → variables it takes (regex on the name)
ENV_GROUPS: dict[str, re.Pattern[str]] = {
    "nccl": re.compile(
        r"^(NCCL_\w+|TORCH_NCCL_\w+|NVSHMEM_\w+|UCX_\w+|GLOO_SOCKET_IFNAME|TP_SOCKET_IFNAME"
        r"|MASTER_ADDR|MASTER_PORT|TORCH_DISTRIBUTED_DEBUG)$"
    ),
    "cuda": re.compile(
        r"^(CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES|CUDA_DEVICE_MAX_CONNECTIONS"
        r"|CUDA_LAUNCH_BLOCKING|CUDA_MODULE_LOADING|PYTORCH_CUDA_ALLOC_CONF|PYTORCH_ALLOC_CONF"
        r"|TRITON_\w+|LD_PRELOAD|OMP_NUM_THREADS)$"
    ),
    "engine": re.compile(r"^(VLLM_\w+|SGLANG_\w+|SGL_\w+)$"),
}


def env_in_effect(env: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Per group, the variables set in ``env`` (default: this process), sorted by name, with
    the values of secret-looking names (``*_KEY``, ``*_TOKEN``...) replaced."""
    src = scrub_env(os.environ if env is None else env)
    return {
        group: {k: src[k] for k in sorted(src) if rx.match(k)} for group, rx in ENV_GROUPS.items()
    }

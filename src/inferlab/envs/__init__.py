"""Environments inferlab builds for real engines (cached under ``~/.cache/inferlab``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.envs.vllm_cpu import ensure_vllm_cpu

__all__ = ["ensure_vllm_cpu"]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.envs.vllm_cpu": ("ensure_vllm_cpu",),
    },
)

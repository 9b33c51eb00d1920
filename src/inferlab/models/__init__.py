"""Models inferlab makes itself, so real engines can run without downloading any weights."""

from __future__ import annotations

from inferlab.models.random import PRESETS, RandomModelInfo, RandomSpec, write_random_model
from inferlab.models.tiny import TinyModelInfo, TinySpec, write_tiny_model

__all__ = [
    "PRESETS",
    "RandomModelInfo",
    "RandomSpec",
    "TinyModelInfo",
    "TinySpec",
    "write_random_model",
    "write_tiny_model",
]

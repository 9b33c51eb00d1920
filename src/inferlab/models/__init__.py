"""Models inferlab makes itself, so real engines can run without downloading any weights."""

from __future__ import annotations

from inferlab.models.tiny import TinyModelInfo, TinySpec, write_tiny_model

__all__ = ["TinyModelInfo", "TinySpec", "write_tiny_model"]

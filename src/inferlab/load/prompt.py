"""One prompt of a load point: text or chat messages, its input length and output request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Prompt"]


@dataclass(slots=True, frozen=True)
class Prompt:
    """One prompt: plain text or chat messages, with its input length and output request
    (tokens; ``input_tokens`` None: not counted)."""

    text: str | None
    messages: tuple[dict[str, Any], ...] | None
    input_tokens: int | None
    output_tokens: int

"""When the sampler only repeats: after ``REPEATS`` proposals in a row of points already tried,
the loop draws an untried point itself (seeded) rather than stop, and says the truth when none
is left: every point tried or ruled out by a refusal (``exhausted``), or a space too large to
list whose points the sampler keeps repeating (``repeats``, with how many are untried)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from inferlab.errors import ConfigError

from .space import Params, Space

__all__ = ["REPEATS", "UNTRIED", "Draw", "draw_untried", "why_none"]

#: proposals in a row the sampler may repeat before the loop draws an untried point itself
REPEATS = 32
#: the largest space whose untried points are listed for that draw
LISTED = 100_000
#: the ``chosen_by`` of a trial the loop drew after the sampler's repeats
UNTRIED = f"an untried point, drawn by the loop: the sampler repeated {REPEATS} proposals"


class Draw:
    """The last draw: its point (None: none left or not listable), how many untried points a
    recorded refusal ruled out, and whether the space could be listed at all."""

    def __init__(self, point: Params | None, ruled_out: int, listed: bool) -> None:
        self.point, self.ruled_out, self.listed = point, ruled_out, listed


def draw_untried(
    space: Space,
    seed: int,
    pending: Sequence[Params],
    recorded: Callable[[Params], bool],
    refused: Callable[[Params], bool],
) -> Draw:
    """The first point, in an order shuffled by ``seed``, that is not ``recorded``, not
    ``pending`` and not ``refused`` like a recorded trial."""
    if space.size() > LISTED:
        return Draw(None, 0, False)
    try:
        points = space.grid_points(seed)
    except ConfigError:  # an integer range too long to list
        return Draw(None, 0, False)
    left = [p for p in points if not recorded(p) and all(dict(p) != dict(q) for q in pending)]
    fresh = [p for p in left if not refused(p)]
    return Draw(fresh[0] if fresh else None, len(left) - len(fresh), True)


def why_none(
    space: Space, tried: int, draw: Draw | None
) -> tuple[Literal["exhausted", "repeats"], str]:
    """Why no proposal came, in the stop rule's words (``draw``: the last draw, if any)."""
    size = space.size()
    if draw is None or draw.listed:
        out = f" ({draw.ruled_out} ruled out by a refusal)" if draw and draw.ruled_out else ""
        return "exhausted", f"{tried} of {int(size)} points tried{out}"
    left = "infinitely many" if math.isinf(size) else f"{int(size) - tried}"
    return "repeats", f"the sampler repeated {REPEATS} proposals in a row; {left} points untried"

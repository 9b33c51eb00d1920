"""A per-launch speed factor of the SIMULATED engine (``sim serve --launch-sd S``).

A real server's speed moves from launch to launch (where its threads land, what the host does
meanwhile); within a launch it holds. With ``--launch-sd S`` (a log standard deviation: 0.04 is
about 4%) the engine draws one factor ``exp(N(0, S²))`` at start-up and multiplies its whole
timing by it for that launch: TTFT, ITL and the jitter of the fixed mode, every step of the
batching model. The ground truth (``GET /truth``) carries the scaled due times, so the model
clock (``campaign.parts.clock``) reads the factor too, free of wall-clock noise.

The draw:

- ``--launch-seed N`` without ``--launch-state``: the factor of seed N (every launch the same);
- ``--launch-seed N --launch-state PATH``: PATH holds a launch counter (created at 0, advanced
  under a lock at each start); launch ``k`` draws the factor of (N, k), so successive launches
  of one argv draw different factors and a fresh state file replays the same sequence (the
  counter advances at ``--launch-sd 0`` too: it counts the launches), and the jitter
  (``--jitter-ms``) of launch ``k`` is seeded by (``--seed``, k): each launch its own noise;
- no ``--launch-seed``: drawn from the OS's entropy (not reproducible).

The factor is logged at start (``[SIMULATED] inferlab sim: SIMULATED launch factor ×1.034``).
"""

from __future__ import annotations

import fcntl
import math
import os
import random
from pathlib import Path

from inferlab.errors import SimError
from inferlab.sim.config import SimConfig

__all__ = ["draw_factor", "launch_line", "next_launch", "with_launch_factor"]


def next_launch(path: Path) -> int:
    """The launch number (0, 1, ...) taken from the counter file ``path`` (created at 0),
    advanced under a POSIX record lock so that concurrent launches take different numbers."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise SimError(f"--launch-state {path}: cannot open: {exc.strerror or exc}") from exc
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        text = os.read(fd, 64).decode(errors="replace").strip()
        try:
            n = int(text) if text else 0
        except ValueError:
            raise SimError(
                f"--launch-state {path}: expected a launch counter (an integer), got {text[:40]!r}"
            ) from None
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{n + 1}\n".encode())
        return n
    finally:
        os.close(fd)


def draw_factor(sd: float, seed: int | None, launch: int | None) -> float:
    """``exp(N(0, sd²))``: from seed ``seed`` and launch number ``launch`` (None: 0), or
    from the OS's entropy when ``seed`` is None; exactly 1 when ``sd`` is 0."""
    if sd <= 0.0:
        return 1.0
    rng: random.Random = (
        random.SystemRandom() if seed is None else random.Random(f"launch:{seed}:{launch or 0}")
    )
    return math.exp(rng.gauss(0.0, sd))


def with_launch_factor(config: SimConfig) -> tuple[SimConfig, int | None]:
    """The config with this launch's factor drawn (``launch_factor``), and the launch number
    taken from ``--launch-state`` (None without one; counted at ``--launch-sd 0`` too, the
    config then unchanged)."""
    launch = next_launch(config.launch_state) if config.launch_state is not None else None
    if launch is not None:
        config = config.model_copy(update={"launch_index": launch})
    if config.launch_sd <= 0.0:
        return config, launch
    factor = draw_factor(config.launch_sd, config.launch_seed, launch)
    return config.model_copy(update={"launch_factor": factor}), launch


def launch_line(config: SimConfig, launch: int | None) -> str:
    """The start-up line that records the factor drawn (without its ``[SIMULATED]`` mark)."""
    seed = "entropy" if config.launch_seed is None else f"seed {config.launch_seed}"
    where = "" if launch is None else f", launch {launch}"
    return (
        f"inferlab sim: SIMULATED launch factor ×{config.launch_factor:.4f} "
        f"(--launch-sd {config.launch_sd:g}, {seed}{where}): every time of this launch × it"
    )

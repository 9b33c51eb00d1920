"""Speculative decoding predicted from the baseline's sweep alone (docs/levers.md).

A candidate drafts ``k`` tokens per sequence per step and verifies ``k + 1``; ``τ`` is the mean
tokens a sequence emits per verify step (1 < τ ≤ k + 1). Both configs decode at batch ≈ C in a
closed loop, so with the baseline TPOT ``t(C)`` (ms, the sweep's median):

* optimistic ``S_hi(C) = τ``: verifying costs one baseline step (memory-bound decode);
* pessimistic ``S_lo(C) = τ·t(C) / (t((k+1)·C) + k·δ·t(C))``: the verify step costs at most the
  baseline's step over ``(k+1)·C`` tokens (and at least its step at C: a sweep whose TPOT falls
  with C, from noise, does not make verifying cheaper than decoding), and each of the ``k``
  draft steps ``δ·t(C)``.

``t`` between measured concurrencies is interpolated linearly in C (exact for a step that is
affine in the batch, and an over-estimate — so a conservative ``S_lo`` — where the step grows
faster than linearly); beyond the sweep it is extrapolated with the last segment's slope (never
below flat) and the point is marked extrapolated.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from inferlab.errors import ConfigError

__all__ = [
    "DEFAULT_DRAFT_COST",
    "HELP_THRESHOLD",
    "METHOD_DRAFT_COST",
    "SpecFlags",
    "SpecPoint",
    "check_accept_length",
    "first_without_help",
    "spec_band",
    "spec_flags",
    "tpot_at",
]

#: a point "helps" while the pessimistic speed-up S_lo is at least this
HELP_THRESHOLD = 1.05
#: δ when the method runs a one-layer draft head and no profile gives the layer count
DEFAULT_DRAFT_COST = 0.05

#: draft method (lower case) → δ, the draft step's cost relative to a target step; None: one
#: layer of the target (1 / layers, from the profile when it has one)
METHOD_DRAFT_COST: Mapping[str, float | None] = {
    "ngram": 0.0,  # prompt lookup: no draft model runs on the GPU
    "eagle": None,
    "eagle3": None,
    "mtp": None,
    "nextn": None,
    "deepseek_mtp": None,
    "medusa": None,
}


@dataclass(frozen=True)
class SpecFlags:
    """What a config's argv says about speculative decoding: method and draft tokens k."""

    method: str
    draft_tokens: int | None
    source: str  # the flags read, for the evidence line


def _int(values: tuple[str, ...] | None) -> int | None:
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


def spec_flags(flags: Mapping[str, tuple[str, ...]]) -> SpecFlags | None:
    """Speculative decoding from canonical flags (SGLang ``--speculative-algorithm/-num-steps/
    -num-draft-tokens``, vLLM ``--speculative-config`` JSON or ``--num-speculative-tokens``);
    None when the flags turn none on."""
    if "--speculative-config" in flags:
        raw = " ".join(flags["--speculative-config"])
        try:
            cfg = json.loads(raw)
        except ValueError:
            cfg = None
        if isinstance(cfg, dict):
            k = cfg.get("num_speculative_tokens")
            method = str(cfg.get("method") or ("draft_model" if cfg.get("model") else "unknown"))
            return SpecFlags(
                method.lower(), int(k) if isinstance(k, int) else None, "--speculative-config"
            )
    algo = flags.get("--speculative-algorithm")
    if algo:
        steps = _int(flags.get("--speculative-num-steps"))
        width = _int(flags.get("--speculative-num-draft-tokens"))
        k = steps if steps is not None else (width - 1 if width is not None else None)
        src = "--speculative-num-steps" if steps is not None else "--speculative-num-draft-tokens"
        return SpecFlags(algo[0].lower(), k, f"--speculative-algorithm {algo[0]}, {src}")
    if "--num-speculative-tokens" in flags or "--speculative-model" in flags:
        model = flags.get("--speculative-model")
        method = "ngram" if model and model[0] == "[ngram]" else "draft_model"
        return SpecFlags(
            method, _int(flags.get("--num-speculative-tokens")), "--num-speculative-tokens"
        )
    return None


def check_accept_length(tau: float, k: int | None) -> None:
    """Refuse τ ≤ 1 (speculation never emits fewer than one token per step) or τ > k + 1."""
    if not math.isfinite(tau) or tau <= 1.0:
        top = f"{k + 1}" if k is not None else "k + 1"
        raise ConfigError(
            f"--accept-length: expected 1 < τ ≤ {top} (tokens per verify step, the bonus token "
            f"included), got {tau:g}"
        )
    if k is not None and tau > k + 1:
        raise ConfigError(
            f"--accept-length: expected 1 < τ ≤ {k + 1} (k = {k} draft tokens verify at most "
            f"k + 1 tokens per step), got {tau:g}"
        )


def tpot_at(sweep: Sequence[tuple[int, float]], c: float) -> tuple[float, bool]:
    """The baseline TPOT (ms) at concurrency ``c`` and whether it is extrapolated.

    ``sweep``: (C, TPOT ms) per measured point. Linear in C between points; past the largest,
    the last segment's slope (at least 0). One point: ``t(c) = t(C)·c/C`` above C (a step grows
    at most in proportion to its batch), extrapolated."""
    pts = sorted((int(a), float(b)) for a, b in sweep if math.isfinite(b) and b > 0)
    if not pts:
        raise ConfigError("speculative decoding: no measured TPOT to interpolate")
    for (c0, t0), (c1, t1) in itertools.pairwise(pts):
        if c0 <= c <= c1:
            return t0 + (t1 - t0) * (c - c0) / (c1 - c0), False
    if c <= pts[0][0]:
        return pts[0][1], c < pts[0][0]
    cn, tn = pts[-1]
    if c == cn:
        return tn, False
    if len(pts) == 1:
        return tn * c / cn, True
    (ca, ta), (cb, tb) = pts[-2], pts[-1]
    slope = max(0.0, (tb - ta) / (cb - ca))
    return tn + slope * (c - cn), True


@dataclass(frozen=True)
class SpecPoint:
    """The band at one measured concurrency: ``low`` = S_lo, ``high`` = S_hi = τ; ``verify_ms``
    is t((k+1)·C), ``draft_ms`` = k·δ·t(C)."""

    concurrency: int
    tpot_ms: float
    verify_ms: float
    draft_ms: float
    low: float
    high: float
    extrapolated: bool


def spec_band(
    sweep: Sequence[tuple[int, float]], *, k: int, tau: float, delta: float
) -> list[SpecPoint]:
    """S_lo and S_hi at every measured concurrency of ``sweep`` (see the module docstring)."""
    if k < 1:
        raise ConfigError(f"--draft-tokens: expected k ≥ 1, got {k}")
    if not 0.0 <= delta < 1.0:
        raise ConfigError(f"--draft-cost: expected 0 ≤ δ < 1 (of a target step), got {delta:g}")
    check_accept_length(tau, k)
    out = []
    for c, t in sorted(sweep):
        if not (math.isfinite(t) and t > 0):
            continue
        tv, extrap = tpot_at(sweep, (k + 1) * c)
        tv = max(tv, t)  # verifying (k+1)·C tokens costs at least a step at C (noisy sweeps)
        draft = k * delta * t
        out.append(SpecPoint(c, t, tv, draft, tau * t / (tv + draft), tau, extrap))
    return out


def first_without_help(
    points: Sequence[SpecPoint], threshold: float = HELP_THRESHOLD
) -> SpecPoint | None:
    """The first (lowest C) point where S_lo falls below ``threshold``; None if none does."""
    for p in sorted(points, key=lambda x: x.concurrency):
        if p.low < threshold:
            return p
    return None

"""What a launch the engine refused rules out: a refusal (``LogSignature.refusal``, a
validation error such as vLLM's ``max_num_batched_tokens (1024) is smaller than max_model_len``)
names the flags involved, and every config with the same values of the searched dimensions
they name is refused too, whatever its other values. The search does not launch those: each
such proposal is told the refused trial's failure instead (``search.loop``), and counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .space import Space

__all__ = ["named", "refusal_lines", "refused_region"]


class _Result(Protocol):
    @property
    def status(self) -> str: ...

    @property
    def implicated(self) -> tuple[str, ...]: ...


def named(dim_flag: str | None, flags: Sequence[str]) -> bool:
    """Whether a dimension's flag is among ``flags``, as given or negated (``--no-X``)."""
    if dim_flag is None:
        return False
    bare = dim_flag.removeprefix("--no-").removeprefix("--")
    return any(f.removeprefix("--no-").removeprefix("--") == bare for f in flags)


def refused_region(space: Space, params: Mapping[str, Any], result: _Result) -> dict[str, Any]:
    """The values of a trial's dimensions that its refusal names (dimension key → value):
    every config with these values is refused too; {} when it was not a refusal, or named no
    dimension searched."""
    flags = result.implicated
    if result.status != "failed" or not flags:
        return {}
    return {
        d.key: params[d.key]
        for d in space.dims
        if d.key in params and (named(d.flag, flags) or (d.env is not None and d.env in flags))
    }


def refusal_lines(skipped: Mapping[str, int], implicated: Mapping[str, Sequence[str]]) -> list[str]:
    """One sentence per refused trial whose values ruled proposals out (``skipped``: trial →
    proposals not launched; ``implicated``: trial → the flags its refusal names)."""
    return [
        f"{name}: refused by the engine ({', '.join(implicated.get(name, ())) or 'its flags'}); "
        f"{n} proposal{'s' if n != 1 else ''} with the same values not launched"
        for name, n in skipped.items()
    ]

"""The lever-rule registry: one rule per lever kind, declared with ``@rule(kind, ...)``.

A rule reads one config's evidence and returns its levers. Its declaration also says which
config changes it explains (``diff``: regular expressions over diff items such as
``flag --speculative-num-steps``, ``env NCCL_PROTO``, ``files fp8_gemm``), which the
predicted-vs-measured check uses, and, for Amdahl levers, the fraction of a profile's decode
step it acts on (``share``) and whether that share is kernel time (``kernel``: the host's floor
bounds it too, ``levers.host``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .evidence import ConfigEvidence, Evidence
from .model import Lever, LeverOptions, Model

__all__ = ["RULES", "Rule", "RuleFn", "ShareFn", "rule", "rules_for"]

RuleFn = Callable[[Evidence, ConfigEvidence, LeverOptions], list[Lever]]
ShareFn = Callable[[Mapping[str, Any]], "float | None"]


@dataclass(frozen=True)
class Rule:
    kind: str
    title: str
    model: Model
    diff: tuple[re.Pattern[str], ...]
    build: RuleFn
    share: ShareFn | None = None
    kernel: bool = False

    def explains(self, item: str) -> bool:
        return any(p.search(item) for p in self.diff)


#: kind → rule, in registration order
RULES: dict[str, Rule] = {}


def rule(
    kind: str,
    title: str,
    *,
    model: Model = "none",
    diff: tuple[str, ...] = (),
    share: ShareFn | None = None,
    kernel: bool = False,
) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn(evidence, config, options) -> [Lever]`` as the rule of ``kind``."""

    def deco(fn: RuleFn) -> RuleFn:
        pats = tuple(re.compile(d) for d in diff)
        RULES[kind] = Rule(kind, title, model, pats, fn, share, kernel)
        return fn

    return deco


def rules_for(item: str) -> list[Rule]:
    """The rules whose ``diff`` declaration explains a diff item."""
    return [r for r in RULES.values() if r.explains(item)]

"""What counts as evidence that a lever took effect, per engine (pure: no I/O).

An engine module declares an ``Evidence``: the lines in which it prints its own parsed args
(``ArgsDump``: vLLM's ``non-default args: {...}``, SGLang's ``server_args=ServerArgs(...)``),
the JSON endpoint that returns them (SGLang ``/get_server_info``), the effects that prove a
flag did something (``EffectEvidence``: speculative decoding's counters move), the lines that
prove an environment variable was read (``EnvEvidence``: NCCL's ``NCCL_PROTO set by environment
to LL`` with ``NCCL_DEBUG=INFO``), and whether its launch log names the kernel-config files it
used (``Using configuration from ...`` / ``Using default W8A8 Block FP8 kernel config``).
The generic checker (``inferlab.campaign.parts.applied``) runs these declarations.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ArgsDump",
    "EffectEvidence",
    "EnvEvidence",
    "Evidence",
    "field_name",
    "parse_call_kwargs",
    "parse_dict_literal",
    "same_value",
]


#: an enum's repr inside a dumped dict (vLLM 0.26: ``<DynamicShapesType.BACKED: 'backed'>``)
_ENUM_REPR = re.compile(r"<([A-Za-z_][\w.]*): ('(?:[^'\\]|\\.)*'|-?\d+)>")


def parse_dict_literal(text: str) -> dict[str, Any] | None:
    """A Python dict literal (``{'port': 8126, 'speculative_config': {...}}``), or None; an
    enum's repr in it (``<Kind.NAME: 'value'>``) reads as its value, and a dataclass's repr
    (vLLM 0.32's ``'profiler_config': ProfilerConfig(profiler='torch', ...)``) as the dict
    of its keyword arguments."""
    src = _ENUM_REPR.sub(r"\2", text)
    for attempt in (text, src):
        try:
            value = ast.literal_eval(attempt)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        return value if isinstance(value, dict) else None
    try:
        value = _tolerant(ast.parse(src.strip(), mode="eval").body, src.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _tolerant(node: ast.expr, text: str) -> Any:
    """``node``'s literal value, where a call with keyword arguments (a dataclass's repr) reads
    as their dict and any other non-literal as its source text."""
    if isinstance(node, ast.Dict):
        return {
            _tolerant(k, text): _tolerant(v, text)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    if isinstance(node, ast.List | ast.Tuple):
        items = [_tolerant(e, text) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Call) and not node.args:
        return {kw.arg: _tolerant(kw.value, text) for kw in node.keywords if kw.arg is not None}
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return ast.get_source_segment(text, node)


def parse_call_kwargs(text: str) -> dict[str, Any] | None:
    """The keyword arguments of a dataclass repr (``ServerArgs(a=1, b='x')``): literal values
    as Python values, a nested dataclass repr as its own dict, anything else (an enum's
    repr) as its source text; None when ``text`` is not a call."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Call):
        return None
    return {kw.arg: _tolerant(kw.value, text.strip()) for kw in node.keywords if kw.arg is not None}


def _balanced(text: str, start: int) -> str | None:
    """``text[start:]`` up to the bracket that closes the one at ``start`` (quotes skipped)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack: list[str] = []
    quote = ""
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in ("'", '"'):
            quote = c
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return text[start : i + 1]
        i += 1
    return None


@dataclass(frozen=True)
class ArgsDump:
    """A log line in which the engine prints its parsed args: ``marker`` precedes a bracketed
    literal (``{`` dict or ``Name(`` call) that ``parse`` turns into field → value.
    ``complete``: every arg is listed (a missing field means the engine has no such arg);
    otherwise only non-default ones are (a missing field means "the default")."""

    name: str
    marker: str
    opener: str
    parse: Callable[[str], dict[str, Any] | None]
    complete: bool

    def find(self, line: str) -> dict[str, Any] | None:
        """The args of ``line`` when it is this dump, else None."""
        at = line.find(self.marker)
        if at < 0:
            return None
        start = line.find(self.opener, at + len(self.marker) - len(self.opener))
        if start < 0:
            return None
        head = start
        if self.opener == "(":  # include the class name: ServerArgs(...)
            m = re.search(r"[A-Za-z_][\w.]*$", line[:start])
            head = m.start() if m else start
        body = _balanced(line, start)
        return None if body is None else self.parse(line[head:start] + body)


VLLM_NON_DEFAULT = ArgsDump(
    "vLLM non-default args", "non-default args: {", "{", parse_dict_literal, complete=False
)
SGLANG_SERVER_ARGS = ArgsDump(
    "SGLang server_args", "server_args=ServerArgs(", "(", parse_call_kwargs, complete=True
)


@dataclass(frozen=True)
class EffectEvidence:
    """Proof that a flag did something once requests ran: for the canonical ``flag``, any of
    ``metrics`` (inferlab metric keys, e.g. ``spec_drafts``) above 0, or a launch-log line
    matching ``log``; a line matching ``log_against`` (and none matching ``log``) proves it did
    not. ``what`` names the effect in the evidence text."""

    flag: str
    what: str
    metrics: tuple[str, ...] = ()
    log: str | None = None
    log_against: str | None = None
    #: the metrics are gauges set only when the engine logs a batch (SGLang's accept length,
    #: every --decode-log-interval steps): 0 is "no reading yet", not "did not run"
    gauge: bool = False


@dataclass(frozen=True)
class EnvEvidence:
    """How a variable shows that it was read. ``names`` (a regex) selects the variables.

    Either ``echo``: a regex (``{name}`` is the variable) whose group 1 is the value read,
    printed only when ``requires`` holds in the config's env (e.g. ``NCCL_DEBUG=INFO``) and
    only by a process that logs ``active`` at all; or ``warns``: a line that appears when the
    value did *not* take (vLLM CPU: ``libiomp is not found in LD_PRELOAD``), for values that
    contain ``when``, judged once ``active`` (a line printed after the check) was logged."""

    names: str
    active: str
    echo: str | None = None
    requires: tuple[str, tuple[str, ...]] | None = None
    warns: str | None = None
    when: str = ""
    hint: str = ""


@dataclass(frozen=True)
class Evidence:
    """Everything an engine offers to prove its levers (see the module docstring)."""

    args_dumps: tuple[ArgsDump, ...] = ()
    server_info_path: str | None = None
    effects: tuple[EffectEvidence, ...] = ()
    env: tuple[EnvEvidence, ...] = ()
    #: kernel-config kinds whose ``Using configuration from`` / default lines the log shows
    files_in_log: tuple[str, ...] = ()
    #: canonical flag → the args-dump fields it may be stored under, where the engine's argparse
    #: ``dest`` is not the flag's own name (SGLang 0.5.16+: ``--cuda-graph-max-bs`` is a
    #: deprecated alias whose dest is ``cuda_graph_max_bs_decode``)
    fields: tuple[tuple[str, str], ...] = ()

    def field_names(self, flag: str) -> tuple[str, ...]:
        """The args-dump fields of canonical ``flag``: its own name first, then the aliases."""
        own = field_name(flag)
        return (own, *(f for k, f in self.fields if k == flag and f != own))


NCCL_ENV = EnvEvidence(
    names=r"NCCL_\w+",
    active=r"NCCL INFO",
    echo=r"NCCL INFO {name} set by environment to (\S+)",
    requires=("NCCL_DEBUG", ("INFO", "TRACE")),
    hint="set NCCL_DEBUG=INFO in the config's env: NCCL then logs each variable it reads",
)


def field_name(flag: str) -> str:
    """The args-dump field of a canonical flag: ``--tp-size`` → ``tp_size``."""
    return flag.lstrip("-").replace("-", "_")


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        s = v.strip()
        low = s.lower()
        if low in ("true", "false"):
            return low == "true"
        try:
            f = float(s)
        except ValueError:
            pass
        else:
            return f
        if s[:1] in ("{", "["):
            try:
                return _norm(json.loads(s))
            except ValueError:
                return s
        return s
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    return v


def _equal(want: Any, got: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return (
            want == got
            or math.isclose(want, got, rel_tol=1e-9)
            or (math.isnan(want) and math.isnan(got))
        )
    if isinstance(want, dict) and isinstance(got, dict):
        return all(k in got and _equal(v, got[k]) for k, v in want.items())
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_equal(a, b) for a, b in zip(want, got))
    if isinstance(want, str) and isinstance(got, str):
        return want == got or want.lower() == got.lower()
    return bool(want == got)


def same_value(values: tuple[str, ...] | None, got: Any) -> bool:
    """Do a flag's values (``()``: a bare boolean flag) match the engine's dumped value?

    Numbers compare as numbers, ``true``/``false`` as booleans, a JSON value (``--speculative-
    config '{...}'``) as the keys it gives (the engine adds its defaults to the rest), several
    values as a list; a one-element list matches its element."""
    if values is None:
        return got is None
    if not values:
        return got is True
    want: Any = _norm(values[0]) if len(values) == 1 else [_norm(v) for v in values]
    have = _norm(got)
    if isinstance(have, list) and not isinstance(want, list):
        return len(have) == 1 and _equal(want, have[0])
    return _equal(want, have)

"""Kernel name → category: an ordered registry of rules, extendable from a user file.

The first rule whose regular expression matches (``re.search``, case-insensitive) the full kernel
name wins; user rules are tried before the built-in ones. A kernel no rule matches is ``other``
and is listed by name, never dropped. Memcpy/memset operations are ``memcpy/memset`` by kind.

A user file (TOML or JSON) holds ``rule`` entries::

    [[rule]]
    category = "moe"
    pattern = "vectorized_gather_kernel"   # the expert-weight gather of an eager MoE
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from inferlab.config.tomlcompat import tomllib
from inferlab.errors import ConfigError

__all__ = [
    "BUILTIN_RULES",
    "CATEGORIES",
    "MEMCPY",
    "OTHER",
    "Categorizer",
    "Rule",
    "load_rules",
    "short_name",
]

MEMCPY, OTHER = "memcpy/memset", "other"

#: display order; a user file may add categories of its own (shown after these)
CATEGORIES = (
    "attention",
    "moe",
    "fp8_gemm",
    "dense_gemm",
    "communication",
    "norm",
    "activation",
    "sampling",
    "elementwise/copy",
    MEMCPY,
    OTHER,
)


@dataclass(frozen=True)
class Rule:
    category: str
    pattern: str


#: built-in rules, tried in order (order matters: fused MoE FP8 kernels are MoE, not FP8 GEMM)
BUILTIN_RULES: tuple[Rule, ...] = (
    Rule(
        "communication",
        r"nccl|all_?reduce|allgather|all_gather|reduce_?scatter|alltoall|"
        r"all_to_all|cross_device_reduce|custom_ar|one_?shot|two_?shot|deep_?ep|dispatch_kernel|"
        r"combine_kernel|mscclpp|pplx",
    ),
    Rule(
        "moe",
        r"fused_moe|moe_|_moe|marlin_moe|moe_align|topk_?gating|grouped_?gemm|group_?gemm|"
        r"GroupProblemShape|prepare_grouped|expert|count_and_sort|ep_scatter|ep_gather|"
        r"silu_and_mul_masked|per_token_group_quant.*masked|cutlass_moe",
    ),
    Rule(
        "fp8_gemm",
        r"w8a8_block_fp8|_w8a8|block_fp8|fp8_(block_)?(gemm|matmul)|"
        r"(gemm|matmul)_fp8|deep_?gemm|deepgemm|fp8_blockwise|sm90_fp8|e4m3.*gemm|gemm.*e4m3|"
        r"f8f6f4|scaled_mm|cutlass.*fp8|fp8.*cutlass",
    ),
    Rule(
        "attention",
        r"flash|fmha|attention|attn|sdpa|paged|mla|flashinfer|"
        r"BatchDecodeWithPaged|BatchPrefillWithPaged|decode_kernel|_fwd_kernel|"
        r"fwd_grouped_kernel|nsa_|sparse_(decode|prefill)|reshape_and_cache|kv_cache|"
        r"rotary|rope|merge_state",
    ),
    Rule(
        "dense_gemm",
        r"nvjet|gemm|cublas|cutlass|xmma|sgemm|hgemm|gemv|splitKreduce|matmul|"
        r"_mm_kernel|marlin|wgmma|ampere_|turing_|volta_|sm\d+_xmma",
    ),
    Rule("norm", r"rms_?norm|layer_?norm|group_?norm|fused_add_rms|norm_kernel|RMSNorm|LayerNorm"),
    Rule("activation", r"silu|gelu|swiglu|act_and_mul|relu|sigmoid|tanh|softmax|erf"),
    Rule(
        "sampling",
        r"argmax|ArgMax|top_?k|top_?p|topk|sampl|multinomial|gumbel|"
        r"bitonicSort|RadixSort|radix_sort|sort_|Sort|penalt|logits",
    ),
    Rule(
        "elementwise/copy",
        r"elementwise|copy|Copy|CatArray|cat_|fill|Fill|index|gather|scatter|"
        r"reduce_kernel|where|arange|pow_|rsqrt|cos_|sin_|neg_|add|mul|div|clamp|compare|"
        r"bitwise|histogram|scan|Scan|cumsum|masked|transpose|permute|contiguous|cast|convert",
    ),
)


class _UserRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: str
    pattern: str


class _UserFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rule: list[_UserRule]


def load_rules(path: Path) -> list[Rule]:
    """User rules from a TOML or JSON file (``rule = [{category, pattern}, ...]``)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"--categories {path}: cannot read: {exc.strerror or exc}") from exc
    try:
        raw: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"--categories {path}: not valid {path.suffix or 'TOML'}: {exc}") from exc
    if isinstance(raw, dict) and "rules" in raw and "rule" not in raw:
        raw["rule"] = raw.pop("rules")
    try:
        f = _UserFile.model_validate(raw)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"])
        raise ConfigError(
            f"--categories {path}: field {where}: {e['msg']} (expected [[rule]] entries "
            "with 'category' and 'pattern')"
        ) from None
    out = []
    for i, r in enumerate(f.rule):
        try:
            re.compile(r.pattern)
        except re.error as exc:
            raise ConfigError(
                f"--categories {path}: rule {i + 1} ({r.category}): bad regular expression "
                f"{r.pattern!r}: {exc}"
            ) from None
        out.append(Rule(r.category, r.pattern))
    return out


class Categorizer:
    """Applies user rules, then the built-in ones; caches the verdict per kernel name."""

    def __init__(
        self, user: list[Rule] | None = None, builtin: tuple[Rule, ...] = BUILTIN_RULES
    ) -> None:
        self.user = list(user or [])
        self.rules = [*self.user, *builtin]
        self._re = [(r.category, re.compile(r.pattern, re.IGNORECASE)) for r in self.rules]
        self._cache: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        c = self._cache.get(name)
        if c is None:
            c = next((cat for cat, rx in self._re if rx.search(name)), OTHER)
            self._cache[name] = c
        return c

    def with_builtin(self, builtin: tuple[Rule, ...]) -> Categorizer:
        """The same user rules in front of another built-in table (e.g. CPU operators)."""
        return Categorizer(self.user, builtin)

    def order(self) -> list[str]:
        extra = [r.category for r in self.rules if r.category not in CATEGORIES]
        return [*dict.fromkeys(extra), *CATEGORIES]


_NS = re.compile(r"\(anonymous namespace\)::|\b[A-Za-z_]\w*::")
_NOISE = re.compile(
    r"gpu_kernel_impl(?:_nocast)?<|\((?:TensorIteratorBase|TensorIterator)&\)|"
    r"(?<=<)\d+, (?:\d+, )*|, array<char\*, \d+ul>|c10::"
)
_LAMBDA = re.compile(r"::\{lambda\([^)]*\)#\d+\}|::operator\(\)\(\) const|\{lambda\([^)]*\)#\d+\}")


def _mangled(name: str) -> str:
    """Readable identifiers of an Itanium-mangled name (``_ZN7cutlass13device_kernel...``)."""
    out: list[str] = []
    i = 0
    while i < len(name) and len(out) < 6:
        m = re.compile(r"(\d+)").search(name, i)
        if m is None:
            break
        n, j = int(m.group(1)), m.end()
        ident = name[j : j + n]
        if n > 2 and re.fullmatch(r"[A-Za-z_]\w*", ident):
            out.append(ident)
            i = j + n
        else:
            i = m.end()
    return "::".join(out[:2]) + (f"<{', '.join(out[2:])}…>" if len(out) > 2 else "")


def short_name(name: str, width: int = 72) -> str:
    """A kernel name for tables: no ``void``, namespaces, lambdas or parameter list."""
    s = name[5:] if name.startswith("void ") else name
    if s.startswith("_Z"):
        s = _mangled(s) or s
    s = _LAMBDA.sub("", s)
    s = _NS.sub("", s)
    s = _NOISE.sub("", s)
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            s = s[:i]
            break
    return s if len(s) <= width else s[: width - 1] + "…"

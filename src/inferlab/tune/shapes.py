"""Which GEMM shapes (N, K) and batch sizes M to tune: from flags, a server log, or a model config.

A shape is the weight of one linear layer as the engine runs it on one tensor-parallel rank:
N output features (rows of B), K input features; M is the number of tokens in the batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.config.jsonfile import read_json
from inferlab.errors import ConfigError
from inferlab.tune.space import DEFAULT_BATCH_SIZES, SCALE_BLOCK

__all__ = [
    "DEFAULT_BATCH_SIZES",
    "LogShapes",
    "Shape",
    "dedupe",
    "parse_batch_sizes",
    "parse_shape",
    "shapes_from_log",
    "shapes_from_model_config",
]


@dataclass(frozen=True, order=True)
class Shape:
    """One weight shape: N output features, K input features; ``source`` says where it came
    from (not part of its identity)."""

    n: int
    k: int
    source: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return f"N={self.n},K={self.k}"


def parse_shape(text: str) -> Shape:
    """``--shape N,K`` → Shape; raises ``ConfigError`` naming the value."""
    parts = [p.strip() for p in text.replace("x", ",").split(",")]
    try:
        n, k = (int(p) for p in parts)
    except ValueError:
        raise ConfigError(
            f"--shape {text!r}: expected N,K as two positive integers, e.g. --shape 7168,2048"
        ) from None
    if n < 1 or k < 1:
        raise ConfigError(f"--shape {text!r}: N and K must be positive")
    return Shape(n, k, source="--shape")


def parse_batch_sizes(text: str | None) -> list[int]:
    """``--batch-sizes 1,2,4`` → sorted distinct M; ``None`` → the engines' default list."""
    if text is None:
        return list(DEFAULT_BATCH_SIZES)
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            m = int(part)
        except ValueError:
            raise ConfigError(
                f"--batch-sizes {text!r}: {part!r} is not an integer (expected e.g. 1,16,64)"
            ) from None
        if m < 1:
            raise ConfigError(f"--batch-sizes {text!r}: batch sizes must be ≥ 1, got {m}")
        out.add(m)
    if not out:
        raise ConfigError(f"--batch-sizes {text!r}: no batch sizes given")
    return sorted(out)


def dedupe(shapes: Iterable[Shape]) -> list[Shape]:
    """First occurrence of each (N, K), in order; later sources are appended to its source."""
    seen: dict[tuple[int, int], Shape] = {}
    for s in shapes:
        key = (s.n, s.k)
        if key not in seen:
            seen[key] = s
        elif s.source and s.source not in seen[key].source.split(", "):
            prev = seen[key]
            seen[key] = Shape(prev.n, prev.k, f"{prev.source}, {s.source}".strip(", "))
    return list(seen.values())


@dataclass(frozen=True)
class LogShapes:
    """Untuned shapes found in a server log, the device names it reports, and warnings."""

    shapes: list[Shape]
    devices: list[str]
    warnings: list[str]


def shapes_from_log(path: Path, local_device: str | None = None) -> LogShapes:
    """The W8A8 block-FP8 shapes a server ran without a tuned config (its "Using default W8A8
    Block FP8 kernel config" warnings), deduplicated. A config file is named for one GPU model:
    when the log's device differs from ``local_device`` (the GPU that will tune), warn."""
    from inferlab.logs import untuned_fp8_gemms

    if not path.is_file():
        raise ConfigError(f"--from-log: {path} does not exist or is not a file")
    found = list(untuned_fp8_gemms(path))
    shapes: list[Shape] = []
    devices: list[str] = []
    warnings: list[str] = []
    for g in found:
        block = tuple(g.block_shape or (SCALE_BLOCK, SCALE_BLOCK))
        if block != (SCALE_BLOCK, SCALE_BLOCK):
            warnings.append(
                f"{path}: N={g.n},K={g.k} uses block_shape {list(block)}; only "
                f"[{SCALE_BLOCK}, {SCALE_BLOCK}] is tuned here (skipped)"
            )
            continue
        if g.dtype and g.dtype != "fp8_w8a8":
            warnings.append(f"{path}: N={g.n},K={g.k} has dtype {g.dtype}, not fp8_w8a8 (skipped)")
            continue
        line = g.lines[0] if g.lines else None
        shapes.append(Shape(g.n, g.k, f"{path.name}:{line}" if line else path.name))
        if g.device and g.device not in devices:
            devices.append(g.device)
    if not shapes and not warnings:
        warnings.append(
            f"{path}: no 'Using default W8A8 Block FP8 kernel config' lines: every block-FP8 "
            "GEMM in this log already had a tuned config (or the log is from another kernel)"
        )
    if local_device is not None:
        local = local_device.replace(" ", "_")
        for dev in devices:
            if dev != local:
                warnings.append(
                    f"{path}: the log was written on {dev}, but this GPU is {local}: the files "
                    f"will be named for {local} (the engine only reads the file named for the GPU "
                    "it runs on); tune on the GPU that serves"
                )
    return LogShapes(dedupe(shapes), devices, warnings)


# -- model configs ---------------------------------------------------------------------------

_V3_FIELDS = (
    "hidden_size",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "num_attention_heads",
)


def _int_field(cfg: Mapping[str, Any], key: str, path: Path) -> int:
    v = cfg.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ConfigError(f"{path}: field {key!r} must be a non-negative integer, got {v!r}")
    return v


def _split(value: int, tp: int, what: str, path: Path) -> int:
    if value % tp:
        raise ConfigError(
            f"{path}: {what} = {value} does not split over --tp {tp} (the engine refuses it too)"
        )
    per = value // tp
    if per % SCALE_BLOCK:
        raise ConfigError(
            f"{path}: {what} per rank = {value}/{tp} = {per} is not a multiple of the "
            f"{SCALE_BLOCK}-wide quantization block at --tp {tp} (the engine refuses it too)"
        )
    return per


def shapes_from_model_config(path: Path, tp: int) -> list[Shape]:
    """The block-FP8 linear shapes (N, K) of one tensor-parallel rank of a DeepSeek-V3-style
    model (MLA attention with ``q_lora_rank``/``kv_lora_rank``, dense and shared-expert MLPs),
    as SGLang's ``tuning_block_wise_kernel.py`` derives them, with the fused q_a/kv_a
    projection current SGLang and vLLM run (N = q_lora_rank + kv_lora_rank + qk_rope_head_dim).

    Routed experts run the fused-MoE kernel (a different tuner) and are not included. With DP
    attention the attention projections run unsplit: tune those with ``--tp 1`` as well."""
    if tp < 1:
        raise ConfigError(f"--tp {tp}: must be ≥ 1")
    cfg = read_json(path, "--model-config")
    if not isinstance(cfg, dict):
        raise ConfigError(f"--model-config: {path} must hold a JSON object")
    cfg = cfg.get("text_config", cfg) if isinstance(cfg.get("text_config"), dict) else cfg
    missing = [k for k in _V3_FIELDS if k not in cfg]
    if missing:
        kind = cfg.get("model_type", "unknown model_type")
        raise ConfigError(
            f"--model-config: {path} ({kind}) lacks {', '.join(missing)}: only DeepSeek-V3-style "
            "MLA configs are understood; give the shapes with --shape N,K or --from-log"
        )
    h = _int_field(cfg, "hidden_size", path)
    kv_lora = _int_field(cfg, "kv_lora_rank", path)
    rope = _int_field(cfg, "qk_rope_head_dim", path)
    nope = _int_field(cfg, "qk_nope_head_dim", path)
    v_dim = _int_field(cfg, "v_head_dim", path)
    heads = _int_field(cfg, "num_attention_heads", path)
    q_lora = cfg.get("q_lora_rank")
    out: list[tuple[int, int, str]] = []
    if q_lora:
        q_lora = _int_field(cfg, "q_lora_rank", path)
        out.append((q_lora + kv_lora + rope, h, "fused_qkv_a_proj_with_mqa"))
        out.append((_split(heads * (nope + rope), tp, "q_b_proj N", path), q_lora, "q_b_proj"))
    else:
        out.append((kv_lora + rope, h, "kv_a_proj_with_mqa"))
        out.append((_split(heads * (nope + rope), tp, "q_proj N", path), h, "q_proj"))
    out.append((_split(heads * (nope + v_dim), tp, "kv_b_proj N", path), kv_lora, "kv_b_proj"))
    out.append((h, _split(heads * v_dim, tp, "o_proj K", path), "o_proj"))
    if cfg.get("intermediate_size"):
        inter = _int_field(cfg, "intermediate_size", path)
        out.append((_split(2 * inter, tp, "dense gate_up_proj N", path), h, "mlp.gate_up_proj"))
        out.append((h, _split(inter, tp, "dense down_proj K", path), "mlp.down_proj"))
    shared = cfg.get("n_shared_experts") or 0
    if shared and cfg.get("moe_intermediate_size"):
        si = _int_field(cfg, "n_shared_experts", path) * _int_field(
            cfg, "moe_intermediate_size", path
        )
        out.append(
            (_split(2 * si, tp, "shared_experts gate_up_proj N", path), h, "shared_experts.gate_up")
        )
        out.append((h, _split(si, tp, "shared_experts down_proj K", path), "shared_experts.down"))
    src = f"{path.name} tp={tp}"
    return dedupe(Shape(n, k, f"{src} {name}") for n, k, name in out)


def collect_shapes(
    shape_args: Sequence[str],
    *,
    log: Path | None = None,
    model_config: Path | None = None,
    tp: int | None = None,
    local_device: str | None = None,
) -> tuple[list[Shape], list[str], list[str]]:
    """All requested shapes, deduplicated in order: ``(shapes, log devices, warnings)``."""
    shapes = [parse_shape(s) for s in shape_args]
    devices: list[str] = []
    warnings: list[str] = []
    if log is not None:
        found = shapes_from_log(log, local_device)
        shapes += found.shapes
        devices = found.devices
        warnings += found.warnings
    if model_config is not None:
        if tp is None:
            raise ConfigError("--model-config needs --tp N (the tensor-parallel size it serves at)")
        shapes += shapes_from_model_config(model_config, tp)
    elif tp is not None:
        raise ConfigError("--tp only applies with --model-config")
    if not shapes and log is None:
        raise ConfigError("no shapes: give --shape N,K, --from-log FILE or --model-config FILE")
    return dedupe(shapes), devices, warnings

"""Tuned kernel config files an engine ships, and which needed shapes they cover.

File names (both engines)::

    N={N},K={K},device_name={dev},dtype=fp8_w8a8,block_shape=[128, 128].json   (SGLang)
    N={N},K={K},device_name={dev},dtype=fp8_w8a8,block_shape=[128,128].json    (vLLM)
    E={E},N={N},device_name={dev}[,dtype=...][,block_shape=[..]][_down].json   (fused MoE)

SGLang keeps fused-MoE files in ``configs/triton_X_Y_Z/`` subdirectories; a file in another
Triton version's directory is only a fallback."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "NeededShape",
    "TunedDir",
    "TunedFile",
    "device_key",
    "match_needed",
    "parse_config_name",
    "scan_dir",
]

_KV = re.compile(r"(\w+)=(\[[^\]]*\]|[^,]*)")


def device_key(name: str) -> str:
    """A GPU name as the engines spell it in file names: spaces become ``_``."""
    return name.strip().replace(" ", "_")


def _block(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    nums = tuple(int(x) for x in re.findall(r"\d+", text))
    return nums or None


@dataclass(frozen=True)
class TunedFile:
    """One config file: ``kind`` is ``fp8_gemm`` (has ``n``, ``k``) or ``fused_moe`` (``e``,
    ``n``); ``subdir`` is SGLang's ``triton_X_Y_Z`` (``""`` at the top); ``down`` marks
    SGLang's separate down-projection file."""

    kind: str
    file: str
    device: str
    n: int
    k: int | None = None
    e: int | None = None
    dtype: str | None = None
    block_shape: tuple[int, ...] | None = None
    subdir: str = ""
    down: bool = False


def parse_config_name(name: str, subdir: str = "") -> TunedFile | None:
    """A config file name parsed, or ``None`` when it is not one."""
    if not name.endswith(".json"):
        return None
    stem = name[: -len(".json")]
    down = stem.endswith("_down")
    if down:
        stem = stem[: -len("_down")]
    kv = {k: v for k, v in _KV.findall(stem)}
    try:
        n, dev = int(kv["N"]), kv["device_name"]
    except (KeyError, ValueError):
        return None
    e = int(kv["E"]) if kv.get("E", "").isdigit() else None
    k = int(kv["K"]) if kv.get("K", "").isdigit() else None
    if e is None and k is None:
        return None
    return TunedFile(
        kind="fused_moe" if e is not None else "fp8_gemm",
        file=name,
        device=dev,
        n=n,
        k=k,
        e=e,
        dtype=kv.get("dtype") or None,
        block_shape=_block(kv.get("block_shape")),
        subdir=subdir,
        down=down,
    )


@dataclass
class TunedDir:
    """A config directory as found: does it exist, and its parsed files (one level of
    subdirectories, for SGLang's per-Triton-version MoE folders)."""

    kind: str
    path: str
    exists: bool
    files: list[TunedFile] = field(default_factory=list)
    unparsed: int = 0

    def for_device(self, device: str) -> list[TunedFile]:
        return [f for f in self.files if f.device == device]


def scan_dir(kind: str, path: Path) -> TunedDir:
    """Index ``path`` (and its direct subdirectories); a missing directory is recorded."""
    if not path.is_dir():
        return TunedDir(kind, str(path), False)
    out = TunedDir(kind, str(path), True)
    for entry in sorted(path.iterdir()):
        entries = [(entry, "")]
        if entry.is_dir():
            entries = [(sub, entry.name) for sub in sorted(entry.iterdir())]
        for f, sub in entries:
            if f.suffix != ".json":
                continue
            parsed = parse_config_name(f.name, sub)
            if parsed is None or parsed.kind != kind:
                out.unparsed += 1
            else:
                out.files.append(parsed)
    return out


@dataclass
class NeededShape:
    """A shape a log says ran on the engine's default config, and the tuned files that would
    serve it here. ``present`` is ``None`` when no config directory could be searched;
    ``current_subdir`` is the Triton directory SGLang reads first (``None``: not SGLang)."""

    kind: str
    device: str
    n: int
    k: int | None
    e: int | None
    dtype: str | None
    block_shape: tuple[int, ...] | None
    lines: list[int]
    present: bool | None
    files: list[str] = field(default_factory=list)
    current_subdir: str | None = None
    in_current_subdir: bool | None = None
    #: SGLang's separate down-projection MoE file (``..._down.json``) is the one needed
    down: bool = False
    #: why the log says it was untuned (``default``, ``down``, ``fallback``)
    reason: str = "default"

    @property
    def shape(self) -> str:
        if self.kind == "fp8_gemm":
            return f"N={self.n},K={self.k}"
        return f"E={self.e},N={self.n}" + (" (down)" if self.down else "")


def _fits(f: TunedFile, need: NeededShape) -> bool:
    if f.kind != need.kind or f.device != need.device or f.n != need.n or f.down != need.down:
        return False
    if need.kind == "fp8_gemm":
        return (
            f.k == need.k
            and (need.dtype is None or f.dtype == need.dtype)
            and (need.block_shape is None or f.block_shape == need.block_shape)
        )
    return (
        f.e == need.e
        and (f.dtype or None) == (need.dtype or None)
        and (need.block_shape is None or f.block_shape == need.block_shape)
    )


def match_needed(
    needed: Iterable[NeededShape], dirs: Sequence[TunedDir], current_subdir: str | None = None
) -> list[NeededShape]:
    """Fill ``present`` / ``files`` of each needed shape from the scanned directories."""
    out: list[NeededShape] = []
    for need in needed:
        scanned = [d for d in dirs if d.kind == need.kind and d.exists]
        if not scanned:
            out.append(need)
            continue
        hits = [f for d in scanned for f in d.files if _fits(f, need)]
        need.present = bool(hits)
        need.files = [f"{f.subdir}/{f.file}" if f.subdir else f.file for f in hits]
        if need.kind == "fused_moe" and current_subdir is not None:
            need.current_subdir = current_subdir
            need.in_current_subdir = any(f.subdir == current_subdir for f in hits)
        out.append(need)
    return out

"""A streaming writer of the safetensors format (one file, tensors written one by one).

The format (huggingface/safetensors, ``README``): an 8-byte little-endian header length, a JSON
header ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``
padded with spaces to a multiple of 8 bytes, then the raw little-endian tensor bytes in header
order. Writing it here needs neither torch nor the ``safetensors`` package (whose numpy API has
no bfloat16), and never holds more than the tensors in flight.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from inferlab.errors import InferlabError

__all__ = ["ITEMSIZE", "TensorEntry", "read_header", "write_safetensors"]

#: bytes per element of the dtypes written here
ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1}


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str  # safetensors dtype: BF16 | F16 | F32 | F8_E4M3
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * ITEMSIZE[self.dtype]


def _header(entries: list[TensorEntry], metadata: dict[str, str]) -> bytes:
    head: dict[str, object] = {"__metadata__": metadata}
    pos = 0
    for e in entries:
        head[e.name] = {
            "dtype": e.dtype,
            "shape": list(e.shape),
            "data_offsets": [pos, pos + e.nbytes],
        }
        pos += e.nbytes
    raw = json.dumps(head, separators=(",", ":")).encode()
    return raw + b" " * (-len(raw) % 8)


def write_safetensors(
    path: Path,
    entries: list[TensorEntry],
    data: Iterable[bytes],
    metadata: dict[str, str] | None = None,
) -> int:
    """Write ``entries`` with their bytes from ``data`` (same order) to ``path`` (through a
    temporary file, renamed when complete); returns the file size in bytes."""
    head = _header(entries, metadata or {"format": "pt"})
    tmp = path.with_name(path.name + ".partial")
    try:
        with tmp.open("wb") as f:
            f.write(len(head).to_bytes(8, "little"))
            f.write(head)
            it = iter(data)
            for e in entries:
                chunk = next(it, None)
                if chunk is None or len(chunk) != e.nbytes:
                    got = "nothing" if chunk is None else f"{len(chunk)} bytes"
                    raise InferlabError(f"safetensors: {e.name} needs {e.nbytes} bytes, got {got}")
                f.write(chunk)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path.stat().st_size


def read_header(path: Path) -> tuple[dict[str, dict[str, object]], int]:
    """The header of a safetensors file (tensors by name, ``__metadata__`` left out) and the
    offset where the tensor data begins."""
    with path.open("rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = json.loads(f.read(n))
    head.pop("__metadata__", None)
    return head, 8 + n

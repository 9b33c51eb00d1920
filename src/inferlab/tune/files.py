"""Engine config files: named and formatted exactly as SGLang and vLLM look them up, merged, never
truncated, written atomically. Which engines, and how each names its files, is the engines' own
knowledge (``EngineSpec.fp8_tuning``, ``inferlab.engines.facts.Fp8Tuning``).

Both engines read ``{config dir}/N={N},K={K},device_name={dev},dtype=fp8_w8a8,block_shape=[128,
128].json`` (SGLang, with a space after the comma) or ``...block_shape=[128,128].json`` (vLLM),
where ``dev`` is ``torch.cuda.get_device_name()`` with spaces replaced by ``_``. The content maps
M (a JSON string key) to the six meta-parameters; the engine picks the entry whose M is closest
to the batch it runs. Files are written as the engines' tuners write them: ``json.dump(...,
indent=4)`` plus a newline, M keys in numeric order.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.config.jsonfile import read_json
from inferlab.errors import ConfigError
from inferlab.tune.config import ENGINE_KEYS, KernelConfig, tuning_of

__all__ = [
    "FileWrite",
    "config_file_name",
    "device_file_name",
    "merge_entries",
    "read_config_file",
    "render_config",
    "write_config_file",
]


def device_file_name(device_name: str) -> str:
    """``torch.cuda.get_device_name()`` as the engines put it in file names."""
    return device_name.replace(" ", "_")


def config_file_name(engine: str, n: int, k: int, device_name: str) -> str:
    """The file name ``engine`` looks up for shape (N, K) on ``device_name``."""
    return tuning_of(engine).file_name(n, k, device_file_name(device_name))


def read_config_file(path: Path) -> dict[int, dict[str, Any]]:
    """An existing engine config file as ``{M: entry}`` (entries kept verbatim). Raises
    ``ConfigError`` naming the file and what is wrong when it cannot be used."""
    data = read_json(path, "existing config file", after="; fix or move it — nothing was written")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: existing config file must be a JSON object of M → config, "
            f"found {type(data).__name__}; nothing was written"
        )
    out: dict[int, dict[str, Any]] = {}
    for key, entry in data.items():
        try:
            m = int(key)
        except ValueError:
            raise ConfigError(
                f"{path}: key {key!r} is not a batch size (an integer M); nothing was written"
            ) from None
        if not isinstance(entry, dict) or any(k not in entry for k in ENGINE_KEYS):
            raise ConfigError(
                f"{path}: entry {key!r} must be an object with {', '.join(ENGINE_KEYS)}; "
                "nothing was written"
            )
        out[m] = entry
    return out


def merge_entries(
    existing: Mapping[int, Mapping[str, Any]], new: Mapping[int, KernelConfig]
) -> dict[int, dict[str, Any]]:
    """``existing`` with the entries of ``new`` replacing those M only, numerically sorted."""
    for m, cfg in new.items():
        if not cfg.engine_usable:
            raise ValueError(f"M={m}: split-K config {cfg.key} cannot go into an engine file")
    merged: dict[int, dict[str, Any]] = {m: dict(e) for m, e in existing.items()}
    merged.update({m: cfg.to_engine() for m, cfg in new.items()})
    return dict(sorted(merged.items()))


def render_config(entries: Mapping[int, Mapping[str, Any]]) -> str:
    """The file text, as the engines' tuners write it (4-space indent, trailing newline)."""
    return json.dumps({str(m): dict(e) for m, e in sorted(entries.items())}, indent=4) + "\n"


@dataclass(frozen=True)
class FileWrite:
    """One written file: which M entries were added, replaced (changed) and kept as they were."""

    path: Path
    engine: str
    n: int
    k: int
    added: list[int] = field(default_factory=list)
    replaced: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "engine": self.engine,
            "n": self.n,
            "k": self.k,
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "kept": self.kept,
        }


def _atomic_write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_config_file(
    directory: Path,
    engine: str,
    n: int,
    k: int,
    device_name: str,
    configs: Mapping[int, KernelConfig],
) -> FileWrite:
    """Merge ``configs`` (M → engine-usable config) into ``engine``'s file for (N, K) on
    ``device_name`` in ``directory``, atomically (temporary file + rename). Entries for other M
    are kept; an existing file that cannot be parsed is an error and is left untouched."""
    path = Path(directory) / config_file_name(engine, n, k, device_name)
    if not configs:
        raise ValueError(f"no configs to write for N={n}, K={k}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{path.parent}: cannot create directory ({exc.strerror})") from None
    existing = read_config_file(path) if path.exists() else {}
    merged = merge_entries(existing, configs)
    added = sorted(m for m in configs if m not in existing)
    replaced = sorted(
        m for m in configs if m in existing and dict(existing[m]) != configs[m].to_engine()
    )
    unchanged = sorted(m for m in configs if m in existing and m not in replaced)
    kept = sorted(m for m in existing if m not in configs)
    try:
        _atomic_write(path, render_config(merged))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write ({exc.strerror})") from None
    return FileWrite(path, engine, n, k, added, replaced, unchanged, kept)

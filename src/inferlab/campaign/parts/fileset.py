"""A config's kernel-config files as given: read from its directory and checked against the
names its engine reads (``EngineSpec.config_dirs``), each a JSON object; and what they add to the
config's identity in the store. Nothing here touches the engine (``campaign.parts.files``
installs)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.config.jsonfile import read_json
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import EngineSpec, get_engine
from inferlab.engines.base import ConfigDir
from inferlab.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["FileSet", "check_files", "config_dir", "config_extra", "read_file_set"]


@dataclass(frozen=True)
class FileSet:
    """One kind's files of one config, as read and checked from its directory."""

    kind: str
    source: Path
    files: dict[str, str]  # name → text

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for name, text in sorted(self.files.items()):
            h.update(name.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()[:16]


def config_dir(spec: EngineSpec, kind: str) -> ConfigDir:
    """The engine's directory for ``kind``; a ``ConfigError`` when it reads none."""
    for d in spec.config_dirs:
        if d.kind == kind:
            return d
    known = ", ".join(d.kind for d in spec.config_dirs) or "none"
    raise ConfigError(
        f"files.{kind}: engine {spec.name!r} reads no {kind} config files that inferlab "
        f"knows of (kinds it knows: {known})"
    )


def read_file_set(spec: EngineSpec, kind: str, source: Path, where: str) -> FileSet:
    """The files of ``source`` for ``kind``: every name must be one the engine reads, every
    file a JSON object. (SGLang's MoE files go into the ``triton_X_Y_Z/`` directory of the
    engine's Triton, the one it reads first.)"""
    cd = config_dir(spec, kind)
    if not source.is_dir():
        raise ConfigError(
            f"{where}: files.{kind}: {source} "
            + ("is not a directory" if source.exists() else "does not exist")
        )
    names = re.compile(cd.names)
    files: dict[str, str] = {}
    for q in sorted(source.iterdir()):
        if not q.is_file() or not names.fullmatch(q.name):
            raise ConfigError(
                f"{where}: files.{kind}: {q} is not a {spec.name} {kind} config file name "
                f"(expected e.g. {_example(cd)})"
            )
        data = read_json(q, f"files.{kind} file")
        if not isinstance(data, dict):
            raise ConfigError(
                f"{q}: files.{kind}: expected a JSON object of batch size → config, "
                f"found {type(data).__name__}"
            )
        files[q.name] = q.read_text(encoding="utf-8")
    if not files:
        raise ConfigError(f"{where}: files.{kind}: {source} holds no config files")
    return FileSet(kind, source, files)


def _example(cd: ConfigDir) -> str:
    if cd.kind == "fp8_gemm":
        sep = ", " if ", " in cd.names else ","
        return (
            f"N=7168,K=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128{sep}128].json"
        )
    return "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json"


def check_files(cfg: ResolvedConfig, where: str) -> list[FileSet]:
    """Every ``files`` directory of ``cfg``, read and checked (``ConfigError`` names it)."""
    spec = get_engine(cfg.engine)
    return [read_file_set(spec, k, Path(d), where) for k, d in sorted(cfg.files.items())]


def config_extra(cfg: ResolvedConfig) -> dict[str, JsonValue]:
    """What ``files``/``tune`` add to a config's identity in the store (a changed file is a
    changed config); ``{}`` without them, so older records keep their identity."""
    out: dict[str, JsonValue] = {}
    given = {k: d for k, d in sorted(cfg.files.items()) if k not in cfg.tune}
    if given:
        spec = get_engine(cfg.engine)
        out["files"] = {
            k: read_file_set(spec, k, Path(d), cfg.name).digest for k, d in given.items()
        }
    if cfg.tune:
        out["tune"] = dict(sorted(cfg.tune.items()))
    return out

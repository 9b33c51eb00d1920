"""Where an engine reads its tuned kernel configs (``EngineSpec.config_dirs``): one directory
inside its package, or a table by release where the directory moved, and the file names there."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MOE_NAMES", "ConfigDir", "VersionedPath", "fp8_gemm_names", "release_key"]


def release_key(version: str) -> tuple[int, ...]:
    """A release's numbers for ordering: ``0.5.15.post1`` → (0, 5, 15, 1), ``0.5.16`` →
    (0, 5, 16); a local part (``+cu130``) and pre-release letters are ignored."""
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+", 1)[0]))


@dataclass(frozen=True)
class VersionedPath:
    """``path`` is where releases from ``since`` on read a kind of config (up to the next row's
    ``since``); ``upto``: the newest release checked to read it ("" for the newest row: and
    later); ``source``: the file of those releases that shows it."""

    since: str
    upto: str
    path: str
    source: str

    @property
    def releases(self) -> str:
        """``0.5.16–0.5.20``, ``0.5.21 and later``, ``up to 0.5.15.post1``."""
        old = release_key(self.since) <= (0,)
        if not self.upto:
            return "every release" if old else f"{self.since} and later"
        return f"up to {self.upto}" if old else f"{self.since}–{self.upto}"


@dataclass(frozen=True)
class ConfigDir:
    """Where an engine reads one kind of tuned kernel config: ``path`` inside the installed
    ``package`` (found in the engine's Python). ``kind`` is ``fp8_gemm`` (W8A8 block-FP8 GEMM)
    or ``moe`` (fused MoE); ``names`` is the regex every file name there must match;
    ``triton_subdirs``: the engine reads ``path/triton_X_Y_Z/`` for its Triton version first
    (SGLang's MoE configs); ``tuner_engine``: the ``--engine`` of ``inferlab tune fp8-gemm``
    that writes these names (None: inferlab's tuner does not make them). ``by_version``: the
    directory moved between releases (oldest first; ``path`` is the newest row's)."""

    kind: str
    package: str
    path: str
    names: str
    triton_subdirs: bool = False
    tuner_engine: str | None = None
    by_version: tuple[VersionedPath, ...] = ()

    def path_for(self, version: str | None) -> str:
        """The directory of release ``version`` (None or unparsable: the newest known)."""
        key = release_key(version) if version else ()
        if not self.by_version or not key:
            return self.path
        got = self.by_version[0].path
        for row in self.by_version:
            if release_key(row.since) <= key:
                got = row.path
        return got

    def row_of(self, path: str) -> VersionedPath | None:
        """The ``by_version`` row whose directory ``path`` (a directory or a file in it,
        absolute or relative) is in, or None."""
        p = "/" + path.replace("\\", "/").strip("/") + "/"
        for row in self.by_version:
            if "/" + row.path.strip("/") + "/" in p:
                return row
        return None

    def releases_of(self, path: str) -> str | None:
        """Which releases read ``path``, as ``VersionedPath.releases``; None when it is in no
        row's directory."""
        row = self.row_of(path)
        return row.releases if row else None


def fp8_gemm_names(block_sep: str) -> str:
    """The regex of W8A8 block-FP8 GEMM config file names (``tune.files``): the engines differ
    only in the block-shape separator (SGLang ``", "``, vLLM ``","``)."""
    return (
        r"N=\d+,K=\d+,device_name=[^,/]+,dtype=\w+,block_shape=\[\d+"
        + re.escape(block_sep)
        + r"\d+\]\.json"
    )


#: fused-MoE config file names (``recon.tuned``), both engines
MOE_NAMES = (
    r"E=\d+,N=\d+,device_name=[^,/]+(?:,dtype=\w+)?(?:,block_shape=\[\d+, ?\d+\])?"
    r"(?:,per_channel_quant=\w+)?(?:_down)?\.json"
)

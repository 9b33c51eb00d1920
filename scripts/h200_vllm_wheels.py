"""Build what vLLM 0.26 needs on the lent H200, as parts that fit one device call each.

    python3 scripts/h200_vllm_wheels.py resolve   # (rarely) re-pin scripts/h200_vllm_wheels.txt
    python3 scripts/h200_vllm_wheels.py build     # download, prune, install, pack → .vllm/NN/
    python3 scripts/h200_vllm_wheels.py split     # cut the packed tree again (when the tree grew)
    python3 scripts/h200_vllm_wheels.py check     # the pinned list parses (no network)

Stdlib only (plus ``packaging`` for ``resolve``), so it runs with any ``python3``.

The GPU image has torch 2.11.0+cu130 and triton 3.6.0, which vLLM 0.26.0 pins; it lacks about 90
packages, listed with their versions in ``scripts/h200_vllm_wheels.txt`` (the one file that pins
them). ``resolve`` makes that list: pip's resolver over ``vllm==0.26.0`` for CPython 3.12 on
x86-64, with torch's family stood in by metadata-only wheels, minus what the image already has in
a version that satisfies the requirement (``scripts/h200_image_freeze.txt``, read there with
``pip list --format=freeze``), minus what a dense Llama served with ``--attention-backend
FLASH_ATTN`` never imports (``SKIP``), and keeping the image's own numpy, numba, llvmlite and
setuptools where vLLM pins others (``KEEP_IMAGE``: the image's torch stack is built against them).

``build`` downloads the pinned wheels into ``~/.cache/inferlab/h200-vllm-0.26.0/wheels``, prunes
the vLLM wheel (``PRUNE``: 304 MB → about 150 MB), installs everything into one ``site/`` tree
with ``pip install --target --platform`` (so nothing is installed there but a copy), packs that
tree as ``tar.xz`` and cuts it into ``.vllm/01``, ``.vllm/02``, … (ignored by git), each small
enough to travel with the working tree in one call. ``scripts/h200_vllm.sh stage N`` copies part
N there; the last call joins them, checks ``SHA256SUMS`` and unpacks into ``/tmp/site``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VLLM = "0.26.0"
ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "scripts" / "h200_vllm_wheels.txt"
FREEZE = ROOT / "scripts" / "h200_image_freeze.txt"
PARTS = ROOT / ".vllm"
#: one call carries at most 64 MiB, the working tree included, and the device counts the tree as
#: it lies on disk (4 KiB blocks: 21.3 MiB for 19.2 MiB of files on 2026-12-07, when a 44.6 MiB
#: part beside it was refused): a part is what the tracked tree's blocks leave of 60 MiB
CALL_BYTES = 60 * 2**20
BLOCK = 4096


def part_bytes() -> int:
    """The largest part that travels beside the tracked tree in one call (bytes)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    files = [ROOT / n for n in names.stdout.decode().split("\0") if n and (ROOT / n).is_file()]
    tree = sum(-(-f.stat().st_size // BLOCK) * BLOCK for f in files)
    return max(8 * 2**20, CALL_BYTES - tree)


PLATFORMS = [
    "manylinux_2_35_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_26_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_12_x86_64",
    "manylinux2010_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
]
#: on the image already, in the versions vLLM pins (stood in while resolving)
IMAGE_TORCH = {"torch": "2.11.0+cu130", "torchaudio": "2.11.0+cu130",
               "torchvision": "0.26.0+cu130", "triton": "3.6.0+image"}  # fmt: skip
#: never imported for a dense Llama on FLASH_ATTN with the Triton/CUTLASS FP8 linear kernels
#: (read in vLLM 0.26's source: each is imported inside a function or behind a has_* check)
SKIP = frozenset(
    {
        "torch", "torchaudio", "torchvision", "triton", "tokenspeed-mla", "tokenspeed-triton",
        "tilelang", "pynvvideocodec", "torchcodec", "nvidia-cutlass-dsl-libs-cu12",
        "humming-kernels", "fastapi-cloud-cli", "fastsafetensors",
    }
)  # fmt: skip
#: the image's own, where vLLM's pins differ (numba 0.65 needs numpy < 2.4; the image has 2.5)
KEEP_IMAGE = frozenset({"numpy", "numba", "llvmlite", "setuptools"})
#: left out of the vLLM wheel: FA2 (the H200 runs FA3), DeepGEMM builds for other Pythons,
#: Blackwell FMHA sources, FlashMLA (MLA models only), the Rust frontend binary (opt-in)
PRUNE = (
    re.compile(r"vllm/vllm_flash_attn/_vllm_fa2_C\.abi3\.so$"),
    re.compile(r"vllm/third_party/deep_gemm/_C\.cpython-3(?:10|11|13|14)-.*\.so$"),
    re.compile(r"vllm/third_party/fmha_sm100/"),
    re.compile(r"vllm/_flashmla_C\.abi3\.so$"),
    re.compile(r"vllm/vllm-rs$"),
)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


def cache() -> Path:
    base = Path(os.environ.get("INFERLAB_CACHE", Path.home() / ".cache" / "inferlab"))
    return base / f"h200-vllm-{VLLM}"


def read_pins(path: Path = PINS) -> dict[str, str]:
    """name → version from the pinned list; ``ValueError`` naming the line for bad input."""
    pins: dict[str, str] = {}
    for no, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _PIN.match(line)
        if m is None:
            raise ValueError(f"{path}:{no}: expected NAME==VERSION, got {raw!r}")
        name = m.group(1).lower().replace("_", "-").replace(".", "-")
        if name in pins:
            raise ValueError(f"{path}:{no}: {name} is pinned twice")
        pins[name] = m.group(2)
    return pins


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def _platform_args() -> list[str]:
    out = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp"]
    for p in PLATFORMS:
        out += ["--platform", p]
    return out


def _metadata_wheel(dest: Path, name: str, version: str, metadata: str) -> None:
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{dist}/METADATA": metadata,
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: inferlab\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{k},,\n" for k in files) + f"{dist}/RECORD,,\n"
    whl = dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)


def resolve() -> None:
    """Re-pin ``PINS`` from pip's resolver and the image's freeze (needs the network)."""
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
             "--platform", "any", f"vllm=={VLLM}", "torch==2.11.0")  # fmt: skip
        items = json.loads(report.read_text())["install"]
    meta = {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in items}
    image = dict(line.strip().split("==", 1) for line in FREEZE.read_text().splitlines()
                 if "==" in line)  # fmt: skip
    image = {canonicalize_name(k): v for k, v in image.items()}
    env = {
        "python_version": "3.12",
        "python_full_version": "3.12.3",
        "platform_machine": "x86_64",
        "platform_system": "Linux",
        "sys_platform": "linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    carry: dict[str, str] = {}
    extras: dict[str, set[str]] = {}

    def visit(rq: Requirement) -> None:
        name = canonicalize_name(rq.name)
        have = image.get(name)
        if name in SKIP:
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
                if d.marker is None or d.marker.evaluate({**env, "extra": ex}):
                    visit(d)
                    break

    visit(Requirement(f"vllm=={VLLM}"))
    head = [line for line in PINS.read_text().splitlines() if line.startswith("#")]
    PINS.write_text("\n".join([*head, *(f"{k}=={carry[k]}" for k in sorted(carry))]) + "\n")
    print(f"{PINS}: {len(carry)} pins")


def _download(pins: dict[str, str], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    want = [f"{k}=={v}" for k, v in pins.items()]
    _pip("download", "-q", "--no-deps", *_platform_args(), "-d", str(dest), *want)


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


def _pack(site: Path) -> list[Path]:
    """``site`` as tar.xz cut into ``PARTS/NN/site.tar.xz.part``, with ``SHA256SUMS``."""
    shutil.rmtree(PARTS, ignore_errors=True)
    PARTS.mkdir()
    blob = cache() / "site.tar.xz"
    subprocess.run(["tar", "-C", str(site), "-cf", str(blob), "-I", "xz -6 -T0", "."], check=True)
    return cut(blob, PARTS)


def cut(
    blob: Path,
    parts: Path,
    member: str = "site.tar.xz.part",
    name: str = "site.tar.xz",
    size: int | None = None,
) -> list[Path]:
    """``blob`` cut into ``parts/NN/member`` of ``size`` bytes (default ``part_bytes()``), each
    with ``SHA256SUMS``: the blob's sha256 and ``name`` (what the joined parts are), then
    ``N parts``. The device scripts join and check them (``scripts/h200_*.sh``)."""
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir(parents=True)
    size = size or part_bytes()
    digest = hashlib.sha256(blob.read_bytes()).hexdigest()
    out: list[Path] = []
    with blob.open("rb") as f:
        for i in range(1, 100):
            chunk = f.read(size)
            if not chunk:
                break
            d = parts / f"{i:02d}"
            d.mkdir()
            (d / member).write_bytes(chunk)
            out.append(d)
    for d in out:
        (d / "SHA256SUMS").write_text(f"{digest}  {name}\n{len(out)} parts\n")
    return out


def _one_wheel(wheels: Path, name: str, version: str) -> Path:
    """The wheel of ``name==version`` in ``wheels`` (the newest download when pip left two)."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    found = [w for w in wheels.glob("*.whl")
             if re.sub(r"[-_.]+", "_", w.name.split("-", 1)[0]).lower() == stem
             and w.name.split("-")[1] == version]  # fmt: skip
    if not found:
        raise FileNotFoundError(f"no wheel of {name}=={version} in {wheels}")
    return max(found, key=lambda w: w.stat().st_mtime)


def build() -> None:
    pins = read_pins()
    wheels = cache() / "wheels"
    _download(pins, wheels)
    vllm = next(wheels.glob(f"vllm-{VLLM}-*.whl"))
    pruned = cache() / "pruned" / vllm.name
    pruned.parent.mkdir(exist_ok=True)
    if not pruned.exists():
        n, size = prune_wheel(vllm, pruned)
        print(f"pruned {n} members ({size / 2**20:.0f} MiB) from {vllm.name}")
    site = cache() / "site"
    shutil.rmtree(site, ignore_errors=True)
    rest = [str(_one_wheel(wheels, k, v)) for k, v in pins.items() if k != "vllm"]
    _pip("install", "-q", "--no-deps", "--no-compile", "--target", str(site), *_platform_args(),
         str(pruned), *rest)  # fmt: skip
    parts = _pack(site)
    total = sum((d / "site.tar.xz.part").stat().st_size for d in parts)
    print(f"{len(parts)} parts, {total / 2**20:.0f} MiB: " + " ".join(str(d.relative_to(ROOT))
          for d in parts))  # fmt: skip


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
        pins = read_pins()
        print(f"{len(pins)} pins, vllm=={pins['vllm']}")
    else:
        print(__doc__.splitlines()[2:5] and "usage: h200_vllm_wheels.py resolve|build|split|check",
              file=sys.stderr)  # fmt: skip
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

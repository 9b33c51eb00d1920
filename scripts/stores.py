"""The committed stores are kept as ``.db.xz`` (issue 47: a light tree): unpack and pack them.

    python scripts/stores.py unpack [X.db.xz ...]  # those, or every benchmarks/results/**/*.db.xz,
                                                   # to X.db beside each
    python scripts/stores.py pack STORE.db         # STORE.db -> STORE.db.xz (xz -9e), to commit

An unpacked ``*.db`` is ignored by git (``.gitignore``: ``*.db``), so ``inferlab report NAME --db
benchmarks/results/h200-vllm.db`` works after ``unpack`` and nothing raw is committed. The golden
input ``tests/fixtures/golden/stores/demo-sim.db.xz`` is packed the same way. A store is never
edited in place: a new run is a new store, packed again.
"""

from __future__ import annotations

import lzma
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SUFFIX = ".xz"
#: xz -9e: 12.4 MB of h200-vllm.db packs to 1.33 MB (-6: 1.36 MB)
PRESET = 9 | lzma.PRESET_EXTREME


def unpack(packed: Path, dest: Path | None = None) -> Path:
    """``X.db.xz`` decompressed to ``dest`` (default: ``X.db`` beside it); a ``dest`` at least
    as new as ``packed`` is kept as it is. Returns the ``.db`` path."""
    if packed.suffix != SUFFIX:
        raise SystemExit(f"stores: {packed} is not a packed store (expected NAME.db{SUFFIX})")
    out = dest if dest is not None else packed.with_suffix("")
    if out.is_file() and out.stat().st_mtime >= packed.stat().st_mtime:
        return out
    part = out.with_name(out.name + ".part")
    with lzma.open(packed) as src, part.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    part.replace(out)
    return out


def pack(store: Path) -> Path:
    """``X.db`` compressed to ``X.db.xz`` beside it (the raw file is left for the caller)."""
    out = store.with_name(store.name + SUFFIX)
    with store.open("rb") as src, lzma.open(out, "wb", preset=PRESET) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return out


def main(argv: list[str]) -> int:
    if argv[1:2] == ["unpack"]:
        named = [Path(a).resolve() for a in argv[2:]]
        for packed in named or sorted(RESULTS.rglob(f"*.db{SUFFIX}")):
            if not packed.is_file():
                raise SystemExit(f"stores: {packed} does not exist")
            print(unpack(packed))
        return 0
    if argv[1:2] == ["pack"] and len(argv) == 3:
        store = Path(argv[2])
        if not store.is_file():
            raise SystemExit(f"stores: {store} does not exist")
        print(pack(store))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

"""Issue 20's tuner cross-check: ``tune fp8-gemm --ray`` and ``--devices 0,1`` against one GPU.

    python benchmarks/ray_tune_check.py --gpu0 A.json --ray B.json --dev01 C.json [--retime]

The files are ``tune-run-*.json`` (``TuneRun``). Checked:

1. every run covers the same (N, K, M) cells as the one-GPU run (none lost, none doubled);
2. each run's chosen engine config (``best_engine``, what goes into the engines' files) times
   within 3% of the one-GPU run's choice *on the same GPU*: with ``--retime`` both configs are
   re-timed on CUDA device 0 by the tuner's own full method (CUDA-graph replay, interleaved,
   ``RETIME_LAUNCHES`` × ``RETIME_REPLAYS``, median µs); a cell whose choice is the same config
   passes without timing. Without ``--retime`` (no GPU) only the stored µs are shown, from
   different GPUs, and part 2 is "not checked".

Prints Markdown; the last line is the verdict; exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TOLERANCE = 0.03

Cell = tuple[int, int, int]


def load(path: str | Path) -> dict[Cell, dict[str, Any]]:
    """(N, K, M) → the stored cell of a tune-run file; a doubled cell is an error."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    out: dict[Cell, dict[str, Any]] = {}
    for r in doc["results"]:
        key = (int(r["n"]), int(r["k"]), int(r["m"]))
        if key in out:
            raise SystemExit(f"{path}: cell N={key[0]},K={key[1]},M={key[2]} appears twice")
        out[key] = r
    return out


def _cfg(d: dict[str, Any]) -> Any:
    from inferlab.tune.config import KernelConfig

    return KernelConfig(
        block_m=int(d["BLOCK_SIZE_M"]),
        block_n=int(d["BLOCK_SIZE_N"]),
        block_k=int(d["BLOCK_SIZE_K"]),
        group_m=int(d["GROUP_SIZE_M"]),
        num_warps=int(d["num_warps"]),
        num_stages=int(d["num_stages"]),
        split_k=int(d.get("split_k", 1)),
    )


def gpu_api() -> Any:
    """The tuner's own GPU-side pieces this check re-times with (imported without a GPU;
    tests/unit/benchmarks/test_ray_tune_check.py checks they still resolve after a module split)."""
    from types import SimpleNamespace

    from inferlab.tune import cells, gpu, timing

    names = ("RETIME_LAUNCHES", "RETIME_REPLAYS", "ShapeContext", "_launchers", "_runnable")
    names += ("alloc_shape", "kernel_samples")
    return SimpleNamespace(
        **{n: getattr(cells, n) for n in names},
        require_gpu_stack=gpu.require_gpu_stack,
        median=timing.median,
    )


def retime(pairs: dict[Cell, list[Any]]) -> dict[Cell, list[float]]:
    """Median µs of each config of each cell, timed together on CUDA device 0."""
    from inferlab.tune import kernel  # torch and triton: the GPU machine only

    api = gpu_api()
    torch = api.require_gpu_stack()
    torch.cuda.set_device(0)
    out: dict[Cell, list[float]] = {}
    for n, k in sorted({(c[0], c[1]) for c in pairs}):
        cells = sorted(c for c in pairs if c[:2] == (n, k))
        sets = api.alloc_shape(torch, kernel, n, k, [c[2] for c in cells])
        ctx = api.ShapeContext(torch, kernel, n, k, sets, None)  # type: ignore[arg-type]
        for cell in cells:
            cfgs = pairs[cell]
            launcher, ncopy = api._launchers(ctx, cell[2], cfgs)
            ran = api._runnable(ctx, launcher, cfgs)
            if len(ran) != len(set(cfgs)):
                raise SystemExit(f"N={n},K={k},M={cell[2]}: a chosen config did not run")
            samples = api.kernel_samples(
                torch,
                [launcher(c) for c in cfgs],
                max(api.RETIME_LAUNCHES, ncopy),
                api.RETIME_REPLAYS,
            )
            out[cell] = [api.median(s) for s in samples]
        del sets, ctx
        torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu0", required=True, help="the one-GPU run")
    ap.add_argument("--ray", help="the --ray run")
    ap.add_argument("--dev01", help="the --devices 0,1 run")
    ap.add_argument("--retime", action="store_true", help="re-time differing choices on GPU 0")
    a = ap.parse_args(argv)
    base = load(a.gpu0)
    others = {w: load(p) for w, p in (("ray", a.ray), ("dev01", a.dev01)) if p}
    lines = ["## Tuner cross-check (benchmarks/ray_tune_check.py)", ""]
    ok_cover = True
    for w, cells in others.items():
        lost, extra = sorted(set(base) - set(cells)), sorted(set(cells) - set(base))
        ok_cover = ok_cover and not lost and not extra
        lines.append(
            f"- {w}: {len(cells)} cells vs {len(base)} on one GPU; missing {lost or 'none'}, extra {extra or 'none'}"
        )
    pairs: dict[Cell, list[Any]] = {}
    for cell, b in sorted(base.items()):
        chosen = [_cfg(b["best_engine"])]
        for cells in others.values():
            if cell in cells and _cfg(cells[cell]["best_engine"]) not in chosen:
                chosen.append(_cfg(cells[cell]["best_engine"]))
        if len(chosen) > 1:
            pairs[cell] = chosen
    timed = retime(pairs) if a.retime and pairs else {}
    ok_time: bool | None = True if (timed or not pairs) else None
    lines += [
        "",
        "| N,K,M | one GPU | " + " | ".join(others) + " |",
        "|---|---|" + "---|" * len(others),
    ]
    for cell, b in sorted(base.items()):
        row = [
            f"{cell[0]},{cell[1]},{cell[2]}",
            f"{b['best_engine']['key']} {b['best_engine_us']:.2f} µs",
        ]
        for cells in others.values():
            o = cells.get(cell)
            if o is None:
                row.append("–")
                continue
            same = o["best_engine"]["key"] == b["best_engine"]["key"]
            text = f"{o['best_engine']['key']} {o['best_engine_us']:.2f} µs"
            if same:
                text += " (same config)"
            elif cell in timed:
                us = timed[cell]
                r = us[pairs[cell].index(_cfg(o["best_engine"]))] / us[0]
                ok_time = bool(ok_time) and r <= 1 + TOLERANCE
                text += f"; on GPU 0: ×{r:.3f} of the one-GPU choice {'✓' if r <= 1 + TOLERANCE else '✗'}"
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    differ = len(pairs)
    verdict = {True: "PASS", False: "FAIL", None: "not checked (no --retime)"}
    lines += [
        "",
        f"coverage: {'PASS' if ok_cover else 'FAIL'}; {differ} cell(s) chose another config; "
        f"within {TOLERANCE:.0%} on one GPU: {verdict[ok_time]}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0 if ok_cover and ok_time is not False else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Device script for issue 8: W8A8 block-FP8 GEMM tuning on an H200 (run with PYTHONPATH=src).

    python benchmarks/fp8_gemm_tune.py smoke --out DIR   # versions, ceilings, correctness,
                                                         # compile-cache check, a few timings
    python benchmarks/fp8_gemm_tune.py full --out DIR    # 4 shapes × 18 M through tune_shapes

Needs only the stdlib, torch and triton (imports nothing of inferlab beyond inferlab.tune.*,
inferlab.errors). The reference numbers below are Table B of
../shared/fixtures/measurements/fp8_block_gemm_h200.md (one H200, torch 2.11, triton 3.6,
CUDA-graph replay over rotating inputs): (N, K, M) → (default µs, best µs, best config).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

SHAPES = [(7168, 2048), (4096, 7168), (24576, 1536), (2112, 7168)]
BATCH = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096]
TABLE: dict[tuple[int, int, int], tuple[float, float, str]] = {
    (7168, 2048, 1): (26.5, 8.9, "BM16_BN64_G1_w8_s5"),
    (7168, 2048, 16): (18.8, 9.0, "BM16_BN64_G1_w8_s5"),
    (7168, 2048, 64): (19.0, 9.4, "BM64_BN64_G1_w4_s5"),
    (7168, 2048, 256): (21.0, 14.0, "BM64_BN128_G16_w4_s3"),
    (7168, 2048, 1024): (71.4, 48.9, "BM64_BN128_G16_w4_s3"),
    (7168, 2048, 4096): (234.1, 166.6, "BM64_BN128_G32_w4_s3"),
    (4096, 7168, 1): (66.4, 23.2, "BM16_BN64_G1_w8_s5"),
    (4096, 7168, 16): (62.2, 23.5, "BM16_BN64_G1_w8_s5"),
    (4096, 7168, 64): (61.8, 22.9, "BM64_BN64_G1_w4_s5"),
    (4096, 7168, 256): (60.9, 29.1, "BM64_BN128_G16_w4_s4"),
    (4096, 7168, 1024): (124.7, 78.1, "BM64_BN128_G16_w4_s4"),
    (4096, 7168, 4096): (466.6, 309.8, "BM64_BN128_G16_w4_s3"),
    (24576, 1536, 1): (41.3, 13.9, "BM16_BN64_G1_w8_s3"),
    (24576, 1536, 16): (19.4, 13.3, "BM16_BN64_G1_w4_s4"),
    (24576, 1536, 64): (20.0, 14.2, "BM64_BN64_G1_w4_s3"),
    (24576, 1536, 256): (48.2, 32.8, "BM64_BN128_G16_w4_s4"),
    (24576, 1536, 1024): (166.2, 118.5, "BM64_BN128_G16_w4_s3"),
    (24576, 1536, 4096): (606.5, 494.2, "BM64_BN128_G64_w4_s4"),
    (2112, 7168, 1): (62.8, 22.6, "BM16_BN64_G1_w8_s5"),
    (2112, 7168, 16): (62.7, 23.2, "BM16_BN64_G1_w8_s5"),
    (2112, 7168, 64): (63.2, 22.4, "BM64_BN64_G1_w4_s5"),
    (2112, 7168, 256): (61.1, 21.8, "BM64_BN64_G1_w4_s5"),
    (2112, 7168, 1024): (101.0, 54.0, "BM128_BN64_G16_w4_s3"),
    (2112, 7168, 4096): (280.4, 192.8, "BM64_BN128_G64_w4_s3"),
}


def parse_key(key: str, split_k: int = 1):  # type: ignore[no-untyped-def]
    """``BM16_BN64_G1_w8_s5`` → KernelConfig."""
    from inferlab.tune.config import KernelConfig

    f = {}
    for part in key.split("_"):
        tag = part[:2] if part[:2] in ("BM", "BN") else part[0]
        f[tag] = int(part[len(tag) :])
    return KernelConfig(f["BM"], f["BN"], 128, f["G"], f["w"], f["s"], split_k)


def candidates_ext(m: int, n: int, k: int, *, split_k: bool = False):  # type: ignore[no-untyped-def]
    """space.candidates plus split factors that divide K/128 beyond (2, 4, 8, 16) — 7, 14, 28
    for K=7168 — with up to 8 waves of CTAs (experiment; proposed for space.py)."""
    from dataclasses import replace

    from inferlab.tune.space import candidates

    base = candidates(m, n, k, split_k=split_k)
    if not split_k:
        return base
    kb = -(-k // 128)
    extra = set()
    for c in base:
        if c.split_k != 1:
            continue
        tiles = -(-m // c.block_m) * -(-n // c.block_n)
        if not (m <= 64 or tiles < 132):
            continue
        for d in range(3, 33):
            if kb % d == 0 and d not in (4, 8, 16) and kb // d >= 2 and tiles * d <= 8 * 132:
                extra.add(replace(c, split_k=d))
    return sorted(set(base) | extra)


def log(msg: str) -> None:
    print(msg, flush=True)


def smoke(out: Path) -> int:
    import torch
    import triton

    from inferlab.tune import kernel, runner
    from inferlab.tune.config import DEFAULT_SGLANG, DEFAULT_VLLM, KernelConfig
    from inferlab.tune.roofline import gemm_bytes, measure_ceilings, roof_pct
    from inferlab.tune.timing import copies_needed, graph_samples, median

    props = torch.cuda.get_device_properties(0)
    log(
        f"torch {torch.__version__} triton {triton.__version__} device {torch.cuda.get_device_name()} "
        f"SMs {props.multi_processor_count} L2 {getattr(props, 'L2_cache_size', 0) >> 20} MiB "
        f"engine name {runner.engine_device_name(torch.cuda.get_device_name())}"
    )
    t0 = time.perf_counter()
    ceil = measure_ceilings(torch)
    log(
        f"ceilings: copy {ceil.copy_gbps:.0f} GB/s, fp8 scaled_mm {ceil.fp8_tflops:.0f} TFLOP/s ({time.perf_counter() - t0:.1f} s)"
    )
    report: dict = {"ceilings": ceil.to_json(), "checks": [], "timings": []}

    # 1. compile pool → cache hits in this process
    probe = [
        parse_key("BM16_BN64_G1_w8_s5"),
        parse_key("BM64_BN128_G1_w4_s3"),
        parse_key("BM128_BN64_G1_w4_s3"),
        parse_key("BM16_BN64_G1_w4_s4", 2),
        parse_key("BM16_BN32_G1_w4_s5", 2),
        parse_key("BM64_BN128_G1_w4_s2"),
    ]
    cfgs = [
        DEFAULT_SGLANG,
        DEFAULT_VLLM,
        parse_key("BM16_BN64_G1_w8_s5"),
        parse_key("BM64_BN128_G16_w4_s3"),
        parse_key("BM128_BN64_G16_w4_s3"),
        parse_key("BM32_BN256_G1_w8_s3"),
        parse_key("BM256_BN128_G16_w8_s3"),
    ]
    splits = [
        parse_key("BM16_BN64_G1_w4_s4", 4),
        parse_key("BM16_BN32_G1_w4_s5", 8),
        parse_key("BM64_BN64_G1_w4_s3", 2),
    ]
    sk = [
        KernelConfig(16, bn, 128, 1, 4, s, sp)
        for bn in (32, 64, 128)
        for s in (3, 4, 5)
        for sp in (2, 4, 7, 8, 14, 28)
    ]
    table_cfgs = [parse_key(v[2]) for v in TABLE.values()]
    warm = {runner._binary_rep(c): c for c in probe + cfgs + splits + sk + table_cfgs}
    t0 = time.perf_counter()
    sec, failed = runner.compile_binaries([(c, 4096, 7168) for c in warm], progress=log)
    log(f"compile pool: {len(warm)} binaries in {sec:.1f} s, failed {failed}")
    dev = torch.device("cuda", 0)
    ops = kernel.make_operands(64, 4096, 7168, device=dev)
    for c in probe:
        ws = None
        if c.split_k > 1:
            pe, tiles = kernel.workspace_elems(c, 64, 4096)
            ws = kernel.make_workspace(pe, tiles, dev)
        t1 = time.perf_counter()
        kernel.launch(c, ops, 64, workspace=ws)
        torch.cuda.synchronize()
        log(
            f"  first launch in this process {c.key}: {1e3 * (time.perf_counter() - t1):.0f} ms (cache hit if ≪ 1 s)"
        )

    # 2. correctness
    ok = True
    seed = 0
    for n, k in SHAPES:
        for m in (1, 16, 100, 1024):
            for c in cfgs + splits:
                variants = [True, False] if c.split_k > 1 else [True]
                for serial in variants:
                    seed += 1
                    try:
                        err = kernel.reference_check(c, m, n, k, seed=seed, serial=serial)
                    except Exception as exc:  # report, keep going
                        err = float("inf")
                        log(f"  EXC {c.key} N={n} K={k} M={m}: {type(exc).__name__}: {exc}")
                    good = err <= runner.MAX_REL_ERR
                    ok &= good
                    report["checks"].append(
                        {"n": n, "k": k, "m": m, "cfg": c.key, "serial": serial, "rel_err": err}
                    )
                    if not good:
                        log(f"  FAIL {c.key} serial={serial} N={n} K={k} M={m}: rel err {err:.3e}")
    errs = [x["rel_err"] for x in report["checks"]]
    log(
        f"reference checks: {len(errs)} run, max rel err {max(errs):.2e}, median {statistics.median(errs):.2e}, all ok={ok}"
    )

    # 3. timings: default vs table best (full method), split-K variants at small M
    def full_time(cfgs_, n, k, m, serial=True):
        ncopy = copies_needed(gemm_bytes(m, n, k), 60 << 20)
        sets = [kernel.make_operands(m, n, k, device=dev) for _ in range(ncopy)]
        need = [kernel.workspace_elems(c, m, n) for c in cfgs_ if c.split_k > 1]
        ws = (
            kernel.make_workspace(max(p for p, _ in need), max(t for _, t in need), dev)
            if need
            else None
        )
        fns = []
        for c in cfgs_:
            fns.append(
                lambda i, c=c: kernel.launch(c, sets[i % ncopy], m, workspace=ws, serial=serial)
            )
            fns[-1](0)
        torch.cuda.synchronize()
        s = graph_samples(torch, fns, launches=max(20, ncopy), replays=10, warmup=1)
        return [median(x) for x in s], s

    log("\ncell | default s3 µs | default s2 µs | table-best cfg µs (table) | repeat µs")
    for (n, k, m), (tdef, tbest, tkey) in TABLE.items():
        if m not in (1, 16, 256, 4096):
            continue
        cb = parse_key(tkey)
        meds, s = full_time([DEFAULT_SGLANG, DEFAULT_VLLM, cb, cb], n, k, m)
        report["timings"].append(
            {
                "n": n,
                "k": k,
                "m": m,
                "cfgs": ["default_s3", "default_s2", tkey, tkey + "(again)"],
                "us": meds,
                "samples": s,
            }
        )
        log(
            f"N={n} K={k} M={m} | {meds[0]:.1f} | {meds[1]:.1f} (table {tdef}) | {tkey} {meds[2]:.1f} (table {tbest}) | {meds[3]:.1f}"
        )

    log("\nsplit-K (serial = last CTA reduces; reduce = second kernel) at K=7168, M ≤ 16")
    for n, k in [(4096, 7168), (2112, 7168)]:
        for m in (1, 16):
            for serial in (True, False):
                meds, _ = full_time(sk, n, k, m, serial=serial)
                order = sorted(range(len(sk)), key=lambda i: meds[i])[:4]
                best = [
                    (sk[i].key, round(meds[i], 2), round(roof_pct(m, n, k, meds[i], ceil), 1))
                    for i in order
                ]
                report["timings"].append(
                    {"n": n, "k": k, "m": m, "split": "serial" if serial else "reduce", "top": best}
                )
                log(
                    f"N={n} K={k} M={m} {'serial' if serial else 'reduce'}: "
                    + "; ".join(f"{a} {b} µs {c}%roof" for a, b, c in best)
                )
    (out / "smoke.json").write_text(json.dumps(report, indent=1, default=str))
    return 0 if ok else 1


def full(
    out: Path,
    devices: list[int] | None,
    shapes: list[tuple[int, int]],
    batch: list[int],
    extra_splits: bool,
    verify_after: bool,
) -> int:
    from inferlab.tune import runner

    lines: list[str] = []

    def progress(s: str) -> None:
        lines.append(s)
        log(f"[{time.strftime('%H:%M:%S')}] {s}")

    t0 = time.perf_counter()
    run = runner.tune_shapes(
        shapes,
        batch,
        split_k=True,
        devices=devices,
        progress=progress,
        candidates_fn=candidates_ext if extra_splits else None,
    )
    log(
        f"candidates: {'space.candidates + split factors 7/14/28 (K=7168), 3/6 (K=1536)' if extra_splits else 'space.candidates'}"
    )
    log(
        f"tune_shapes wall {run.wall_s:.1f} s (outside {time.perf_counter() - t0:.1f} s), compile {run.compile_s:.1f} s, "
        f"{run.binaries} binaries, compile failures {len(run.compile_failed)}"
    )
    data = run.to_json()
    (out / f"tune_full_{run.devices}gpu.json").write_text(json.dumps(data, indent=1))
    ceil = run.ceilings
    log(
        f"device {run.device_name} ×{run.devices}; ceilings copy {ceil['copy_gbps']:.0f} GB/s fp8 {ceil['fp8_tflops']:.0f} TFLOP/s"
    )
    log(
        "\n| N | K | M | default µs | tuned µs | tuned config | table best µs | tuned/table | split-K best µs | split-K config | %roof tuned | %roof split-K | screened/cands | source | rel err |"
    )
    log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    bar_fail = []
    for r in run.results:
        t = TABLE.get((r.n, r.k, r.m))
        ratio = r.best_engine_us / t[1] if t else None
        if ratio is not None and ratio > 1.03:
            bar_fail.append(f"N={r.n} K={r.k} M={r.m} ratio {ratio:.3f}")
        log(
            f"| {r.n} | {r.k} | {r.m} | {r.default_us:.1f} | {r.best_engine_us:.1f} | {r.best_engine.key} | "
            f"{t[1] if t else ''} | {f'{ratio:.3f}' if ratio else ''} | {r.best_us:.1f} | {r.best.key} | "
            f"{r.roof_pct:.0f} | {r.best_roof_pct:.0f} | {r.screened}/{r.candidates} | {r.source} | {r.rel_err:.1e} |"
        )
    sk = [(r.n, r.k, r.m, r.best_roof_pct) for r in run.results if r.k == 7168 and r.m <= 16]
    sk_fail = [x for x in sk if x[3] < 50]
    log(f"\nBAR 3%: {24 - len(bar_fail)}/24 cells within 3% of table best; failures: {bar_fail}")
    log(f"BAR 5 min: wall {run.wall_s:.1f} s ({'ok' if run.wall_s <= 300 else 'OVER'})")
    log(
        f"BAR split-K ≥50% roof (K=7168, M≤16): {len(sk) - len(sk_fail)}/{len(sk)}; below: {sk_fail}"
    )
    if verify_after and set(shapes) >= {(n, k) for n, k, _ in TABLE}:
        verify(run, out)
    return 0


def _time_entries(entries, n, k, m, split_cfgs):  # type: ignore[no-untyped-def]
    """Median µs per entry (label, fn(ops, ws)), all captured and replayed interleaved by the
    tuner's full method (≥ 20 launches over inputs > 3× L2, 10 replays)."""
    import torch

    from inferlab.tune import kernel
    from inferlab.tune.roofline import gemm_bytes
    from inferlab.tune.timing import copies_needed, graph_samples, median

    dev = torch.device("cuda", torch.cuda.current_device())
    ncopy = copies_needed(gemm_bytes(m, n, k), 60 << 20)
    sets = [kernel.make_operands(m, n, k, device=dev) for _ in range(ncopy)]
    ws = None
    if split_cfgs:
        need = [kernel.workspace_elems(c, m, n) for c in split_cfgs]
        ws = kernel.make_workspace(max(p for p, _ in need), max(t for _, t in need), dev)
    fns = [lambda i, f=f: f(sets[i % ncopy], ws) for _, f in entries]
    for f in fns:
        f(0)
    torch.cuda.synchronize()
    samples = graph_samples(torch, fns, launches=max(20, ncopy), replays=10, warmup=1)
    return [median(x) for x in samples]


def verify(run, out: Path) -> None:  # type: ignore[no-untyped-def]
    """Same machine, same moment: the tuned config against the table's best config and both
    defaults, interleaved; the engines' specialization of the kernel against inferlab's; a
    plain copy kernel moving the same bytes (what one launch can reach)."""
    import torch

    from inferlab.tune import kernel
    from inferlab.tune.config import DEFAULT_SGLANG, DEFAULT_VLLM
    from inferlab.tune.roofline import Ceilings, gemm_bytes, roof_pct
    from inferlab.tune.timing import copies_needed, graph_samples, median

    ceil = Ceilings(**run.ceilings)
    by = {(r.n, r.k, r.m): r for r in run.results}
    rows = []
    log("\n## same-run check: tuned vs the table's best config, interleaved (µs)")
    log(
        "| N | K | M | tuned cfg | tuned | table cfg | table cfg now | tuned/table-cfg-now | table µs "
        "| tuned/table | vLLM default s2 | SGLang default s3 | split-K | engine-spec table cfg |"
    )
    log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (n, k, m), (_tdef, tbest, tkey) in TABLE.items():
        r = by[(n, k, m)]
        tcfg = parse_key(tkey)
        entries = [
            ("tuned", lambda o, w, c=r.best_engine, m=m: kernel.launch(c, o, m)),
            ("table", lambda o, w, c=tcfg, m=m: kernel.launch(c, o, m)),
            ("vllm", lambda o, w, m=m: kernel.launch(DEFAULT_VLLM, o, m)),
            ("sglang", lambda o, w, m=m: kernel.launch(DEFAULT_SGLANG, o, m)),
        ]
        splits = [r.best] if r.best.split_k > 1 else []
        if splits:
            entries.append(
                ("split", lambda o, w, c=r.best, m=m: kernel.launch(c, o, m, workspace=w))
            )
        if m in (1, 16, 4096):
            entries.append(
                ("engspec", lambda o, w, c=tcfg, m=m: kernel.launch_engine_spec(c, o, m))
            )
        meds = dict(zip([e[0] for e in entries], _time_entries(entries, n, k, m, splits)))
        row = {"n": n, "k": k, "m": m, "tuned_cfg": r.best_engine.key, "table_cfg": tkey}
        row.update({"table_us": tbest, **meds})
        rows.append(row)
        split_txt = ""
        if splits:
            pct = roof_pct(m, n, k, meds["split"], ceil)
            split_txt = f"{meds['split']:.1f} ({r.best.key}, {pct:.0f}%)"
        eng_txt = f"{meds['engspec']:.1f}" if "engspec" in meds else ""
        log(
            f"| {n} | {k} | {m} | {r.best_engine.key} | {meds['tuned']:.1f} | {tkey} | "
            f"{meds['table']:.1f} | {meds['tuned'] / meds['table']:.3f} | {tbest} | "
            f"{meds['tuned'] / tbest:.3f} | {meds['vllm']:.1f} | {meds['sglang']:.1f} | "
            f"{split_txt} | {eng_txt} |"
        )
    ratios = [x["tuned"] / x["table"] for x in rows]
    ok = sum(x <= 1.03 for x in ratios)
    log(f"same-run: tuned/table-config ≤ 1.03 in {ok}/24 cells; worst {max(ratios):.3f}")
    eng = [(x["table"], x["engspec"]) for x in rows if "engspec" in x]
    log("engine-spec/inferlab time, same config: " + ", ".join(f"{b / a:.3f}" for a, b in eng))
    dev = torch.device("cuda", 0)
    for n, k in [(2112, 7168), (4096, 7168)]:
        nbytes = gemm_bytes(1, n, k)
        half = nbytes // 2
        ncopy = copies_needed(nbytes, 60 << 20)
        src = [torch.randint(0, 255, (half,), dtype=torch.uint8, device=dev) for _ in range(ncopy)]
        dst = [torch.empty_like(x) for x in src]

        def fn(i: int, src=src, dst=dst, ncopy=ncopy) -> None:  # type: ignore[no-untyped-def]
            dst[i % ncopy].copy_(src[i % ncopy])

        fn(0)
        t = median(graph_samples(torch, [fn], launches=max(20, ncopy), replays=10)[0])
        log(
            f"copy kernel moving {nbytes / 1e6:.1f} MB (read+write) per launch, graph replay: "
            f"{t:.2f} µs = {nbytes / t / 1e3:.0f} GB/s = "
            f"{100 * nbytes / t / 1e3 / ceil.copy_gbps:.0f}% of the 1 GiB copy ceiling"
        )
        rows.append({"copy_bytes": nbytes, "us": t})
    (out / "verify.json").write_text(json.dumps(rows, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["smoke", "full"])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--devices", default=None, help="comma-separated CUDA indices (default: all)")
    ap.add_argument("--shapes", default=None, help="N,K;N,K;... (default: the 4 table shapes)")
    ap.add_argument("--batch", default=None, help="comma-separated M (default: the engines' 18)")
    ap.add_argument("--extra-splits", action="store_true", help="add split factors 7/14/28 …")
    ap.add_argument("--no-verify", action="store_true", help="skip the same-run table check")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.mode == "smoke":
        return smoke(out)
    devices = [int(x) for x in a.devices.split(",")] if a.devices else None
    shapes = (
        [tuple(int(v) for v in s.split(",")) for s in a.shapes.split(";")] if a.shapes else SHAPES
    )
    batch = [int(x) for x in a.batch.split(",")] if a.batch else BATCH
    return full(out, devices, shapes, batch, a.extra_splits, not a.no_verify)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())

"""Device script: record two real decode traces whose FP8 block GEMMs differ only in their config.

A Llama-style decoder (random weights; hidden 2048, 8 layers, 16 query / 4 KV heads of 128,
MLP 5632, vocab 32000) whose linear layers are W8A8 block-FP8 GEMMs through
``inferlab.tune.kernel`` (the engines' Triton kernel), activations quantized per token group of
128 in torch. One decode step (batch 8, attention over a static 1024-slot KV cache) is captured
in a CUDA graph, as SGLang and vLLM run decode. Two variants:

- ``default``: every GEMM on SGLang's default config (BM64_BN128_G32_w4_s3: no tuned file);
- ``tuned``: every GEMM on the config ``tune_shapes`` finds for M = 8 (engine-usable only).

For each: ms per step unprofiled (CUDA events over 200 replays, median of 5 runs), then a
torch.profiler trace of 16 replays, each in ``record_function("decode_step_<i>")``. With
``inferlab profile default.json.gz --vs tuned.json.gz`` the FP8 GEMM share of the step, its
Amdahl bound and the measured step speed-up can be set side by side.

    PYTHONPATH=src python3 benchmarks/record_fp8_decode_trace.py --out $OUT
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from inferlab.tune import kernel
from inferlab.tune.config import DEFAULT_SGLANG, KernelConfig

H, LAYERS, HEADS, KV_HEADS, HD, FFN, VOCAB = 2048, 8, 16, 4, 128, 5632, 32000
B, CACHE = 8, 1024
SHAPES = {  # name → (N, K)
    "qkv": ((HEADS + 2 * KV_HEADS) * HD, H),
    "o": (H, HEADS * HD),
    "gate_up": (2 * FFN, H),
    "down": (H, FFN),
}


def quant(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token-group (1×128) fp8 quantization: values and fp32 scales [M, K/128]."""
    m, k = x.shape
    g = x.float().view(m, k // 128, 128)
    s = g.abs().amax(-1).clamp(min=1e-6) / kernel.FP8_MAX
    q = (g / s.unsqueeze(-1)).to(kernel.FP8).view(m, k)
    return q, s.contiguous()


class Fp8Linear:
    def __init__(self, n: int, k: int, dev: torch.device) -> None:
        w = torch.randn(n, k, device=dev) * 0.02
        wb = w.view(n // 128, 128, k // 128, 128)
        ws = wb.abs().amax(dim=(1, 3)).clamp(min=1e-6) / kernel.FP8_MAX
        self.w = (wb / ws[:, None, :, None]).view(n, k).to(kernel.FP8)
        self.ws = ws.contiguous()
        self.n, self.k = n, k
        self.cfg: KernelConfig = DEFAULT_SGLANG
        self.out = torch.empty(B, n, dtype=torch.bfloat16, device=dev)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        q, s = quant(x)
        kernel.launch(self.cfg, kernel.Operands(q, s, self.w, self.ws, self.out), x.shape[0])
        return self.out


class Layer:
    def __init__(self, dev: torch.device) -> None:
        self.lin = {name: Fp8Linear(n, k, dev) for name, (n, k) in SHAPES.items()}
        self.kc = torch.randn(B, KV_HEADS, CACHE, HD, device=dev, dtype=torch.bfloat16)
        self.vc = torch.randn(B, KV_HEADS, CACHE, HD, device=dev, dtype=torch.bfloat16)
        self.n1 = torch.ones(H, device=dev, dtype=torch.bfloat16)
        self.n2 = torch.ones(H, device=dev, dtype=torch.bfloat16)

    def __call__(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, (H,), self.n1)
        qkv = self.lin["qkv"](h)
        q, k, v = qkv.split([HEADS * HD, KV_HEADS * HD, KV_HEADS * HD], dim=-1)
        self.kc.index_copy_(2, pos, k.view(B, KV_HEADS, 1, HD))
        self.vc.index_copy_(2, pos, v.view(B, KV_HEADS, 1, HD))
        att = F.scaled_dot_product_attention(
            q.view(B, HEADS, 1, HD), self.kc, self.vc, enable_gqa=True
        )
        x = x + self.lin["o"](att.reshape(B, HEADS * HD))
        h = F.rms_norm(x, (H,), self.n2)
        gu = self.lin["gate_up"](h)
        g, u = gu.split([FFN, FFN], dim=-1)
        return x + self.lin["down"](F.silu(g) * u)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    layers = [Layer(dev) for _ in range(LAYERS)]
    emb = torch.randn(VOCAB, H, device=dev, dtype=torch.bfloat16) * 0.02
    head = torch.randn(VOCAB, H, device=dev, dtype=torch.bfloat16) * 0.02
    ids = torch.randint(0, VOCAB, (B,), device=dev)
    pos = torch.tensor([CACHE - 1], device=dev)

    def step() -> None:
        x = emb[ids]
        for lyr in layers:
            x = lyr(x, pos)
        ids.copy_(torch.argmax(F.rms_norm(x, (H,)) @ head.T, dim=-1))

    from inferlab.tune.runner import tune_shapes

    t0 = time.perf_counter()
    run = tune_shapes(list(SHAPES.values()), [B], split_k=False, progress=print)
    tuned = {(r.n, r.k): r.best_engine for r in run.results}
    print(f"tuned {len(tuned)} shapes at M={B} in {time.perf_counter() - t0:.1f} s")
    result: dict[str, object] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "model": {
            "hidden": H,
            "layers": LAYERS,
            "heads": HEADS,
            "kv_heads": KV_HEADS,
            "ffn": FFN,
            "vocab": VOCAB,
            "batch": B,
            "cache": CACHE,
        },
        "tuned": {f"{n},{k}": c.key for (n, k), c in tuned.items()},
        "gemm_us": {
            f"{r.n},{r.k}": {"default": r.default_us, "tuned": r.best_engine_us}
            for r in run.results
        },
    }
    for variant in ("default", "tuned"):
        for lyr in layers:
            for lin in lyr.lin.values():
                lin.cfg = DEFAULT_SGLANG if variant == "default" else tuned[(lin.n, lin.k)]
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        runs = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            graph.replay()
            e0.record()
            for _ in range(200):
                graph.replay()
            e1.record()
            torch.cuda.synchronize()
            runs.append(e0.elapsed_time(e1) / 200)
        result[f"{variant}_ms_per_step"] = statistics.median(runs)
        result[f"{variant}_ms_runs"] = runs
        print(f"{variant}: {statistics.median(runs):.4f} ms/step (runs {runs})")
        from torch.profiler import ProfilerActivity, profile, record_function

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(16):
                with record_function(f"decode_step_{i}"):
                    graph.replay()
            torch.cuda.synchronize()
        raw = out / f"fp8_decode_{variant}.json"
        prof.export_chrome_trace(str(raw))
        with raw.open("rb") as src, gzip.open(f"{raw}.gz", "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
        raw.unlink()
        del graph
    d, t = result["default_ms_per_step"], result["tuned_ms_per_step"]
    print(f"step speed-up tuned/default: {d / t:.3f}x")  # type: ignore[operator]
    (out / "fp8_decode_traces.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

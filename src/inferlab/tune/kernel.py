# Triton kernels take no Python annotations beyond tl.constexpr:
# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""GPU only: the W8A8 block-FP8 GEMM kernels, their launcher, compile warm-up and reference check.

Importing this module needs torch and triton (CUDA); :mod:`inferlab.tune.runner` imports it
lazily. C[M,N] (bf16) = (A·As)(B·Bs)ᵀ with A fp8 e4m3 [M,K], As fp32 [M, K/128] (per-token
groups), B fp8 e4m3 [N,K], Bs fp32 [⌈N/128⌉, K/128] (128×128 blocks).

``_w8a8_block_fp8_matmul`` is the engines' kernel (SGLang ``fp8_kernel.py`` /
vLLM ``fp8_utils.py`` ``_w8a8_block_fp8_matmul``/``_w8a8_triton_block_scaled_mm``) with the same
body and meta-parameters, so BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps and num_stages mean the
same thing. Differences, none in what a config does: M, GROUP_SIZE_M and the scale strides are
not specialized (``do_not_specialize``), so one binary serves every M and every shape whose N
and K have the same divisibility by 16; the engines recompile per GROUP_SIZE_M.

``_w8a8_block_fp8_matmul_splitk`` adds split-K (grid axis 1 = the K split), inferlab's own
extension for small M: each CTA sums its share of the K blocks into fp32 partials; either the
last CTA of a tile to arrive (an atomic counter per tile, reset by that CTA) adds the others'
partials and writes C (``serial``, one launch), or a second kernel reduces them (two launches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from inferlab.tune.config import KernelConfig, spec_class

__all__ = [
    "Operands",
    "SplitWorkspace",
    "launch",
    "launch_engine_spec",
    "make_operands",
    "reference_check",
    "spec_class",
    "warm",
    "workspace_elems",
]

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
GROUP = 128
#: split-K reduction used unless a caller asks otherwise: a second kernel (False) was 2–10 %
#: faster than last-CTA-reduces (True) at K=7168, M ∈ {1, 16} on one H200 (4 cells, best of 27
#: configs each: 13.5 vs 14.6, 13.4 vs 13.6, 10.2 vs 11.2, 10.1 vs 10.5 µs; RESULTS.md)
SPLIT_SERIAL = False


@triton.jit
def _tile_of(pid, M, N, GROUP_SIZE_M, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    """(tile row, tile column) of program ``pid``: GROUP_SIZE_M tile rows at a time are walked
    column by column (the engines' L2-friendly order, identical mapping)."""
    n_rows = tl.cdiv(M, BLOCK_SIZE_M)
    per_group = GROUP_SIZE_M * tl.cdiv(N, BLOCK_SIZE_N)
    row0 = (pid // per_group) * GROUP_SIZE_M
    height = min(n_rows - row0, GROUP_SIZE_M)
    return row0 + pid % height, (pid % per_group) // height


@triton.jit
def _accumulate(
    A, B, As, Bs, tile_m, tile_n, M, N, K, k_first, k_last, group_n, group_k,
    stride_am, stride_ak, stride_bk, stride_bn, stride_As_m, stride_As_k, stride_Bs_k, stride_Bs_n,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
):  # fmt: skip  # Triton signature: arguments grouped as in the engines' kernel
    """fp32 sum over K blocks [k_first, k_last) of (A tile · As) (B tile · Bs)ᵀ; rows/columns
    past M/N wrap (their results are masked at the store), K past the end loads zeros."""
    rows = (tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    cols = (tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    kk = tl.arange(0, BLOCK_SIZE_K)
    a_ptr = A + rows[:, None] * stride_am + (k_first * BLOCK_SIZE_K + kk[None, :]) * stride_ak
    b_ptr = B + (k_first * BLOCK_SIZE_K + kk[:, None]) * stride_bk + cols[None, :] * stride_bn
    sa_ptr = As + rows * stride_As_m
    sb_ptr = Bs + (cols // group_n) * stride_Bs_n
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for kb in range(k_first, k_last):
        left = K - kb * BLOCK_SIZE_K
        a = tl.load(a_ptr, mask=kk[None, :] < left, other=0.0)
        b = tl.load(b_ptr, mask=kk[:, None] < left, other=0.0)
        group = kb * BLOCK_SIZE_K // group_k
        sa = tl.load(sa_ptr + group * stride_As_k)
        sb = tl.load(sb_ptr + group * stride_Bs_k)
        acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
        a_ptr += BLOCK_SIZE_K * stride_ak
        b_ptr += BLOCK_SIZE_K * stride_bk
    return acc


@triton.jit
def _store_tile(
    C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
):  # fmt: skip  # Triton signature: arguments grouped as in the engines' kernel
    rows = tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    cols = tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    ptrs = C + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(ptrs, acc.to(C.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit(do_not_specialize=["M", "GROUP_SIZE_M", "stride_As_m", "stride_Bs_n"])
def _w8a8_block_fp8_matmul(
    A, B, C, As, Bs, M, N, K, group_n, group_k,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_As_m, stride_As_k, stride_Bs_k, stride_Bs_n, GROUP_SIZE_M,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
):  # fmt: skip  # Triton signature: arguments grouped as in the engines' kernel
    tile_m, tile_n = _tile_of(tl.program_id(0), M, N, GROUP_SIZE_M, BLOCK_SIZE_M, BLOCK_SIZE_N)
    acc = _accumulate(
        A, B, As, Bs, tile_m, tile_n, M, N, K, 0, tl.cdiv(K, BLOCK_SIZE_K), group_n, group_k,
        stride_am, stride_ak, stride_bk, stride_bn, stride_As_m, stride_As_k, stride_Bs_k,
        stride_Bs_n, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K,
    )  # fmt: skip  # the kernel's arguments, grouped as its signature
    _store_tile(C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N)


@triton.jit
def _w8a8_block_fp8_matmul_engine_spec(
    A, B, C, As, Bs, M, N, K, group_n, group_k,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_As_m, stride_As_k, stride_Bs_k, stride_Bs_n,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):  # fmt: skip  # Triton signature: arguments grouped as in the engines' kernel
    """The same kernel specialized the engines' way (GROUP_SIZE_M constexpr, M and strides
    specialized by Triton's defaults): only to check that the unspecialized binary is as fast."""
    tile_m, tile_n = _tile_of(tl.program_id(0), M, N, GROUP_SIZE_M, BLOCK_SIZE_M, BLOCK_SIZE_N)
    acc = _accumulate(
        A, B, As, Bs, tile_m, tile_n, M, N, K, 0, tl.cdiv(K, BLOCK_SIZE_K), group_n, group_k,
        stride_am, stride_ak, stride_bk, stride_bn, stride_As_m, stride_As_k, stride_Bs_k,
        stride_Bs_n, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K,
    )  # fmt: skip  # the kernel's arguments, grouped as its signature
    _store_tile(C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N)


@triton.jit(do_not_specialize=["M", "GROUP_SIZE_M", "SPLIT_K", "stride_As_m", "stride_Bs_n"])
def _w8a8_block_fp8_matmul_splitk(
    A, B, C, As, Bs, P, Locks, M, N, K, group_n, group_k,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_As_m, stride_As_k, stride_Bs_k, stride_Bs_n, GROUP_SIZE_M, SPLIT_K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    SERIAL: tl.constexpr,
):  # fmt: skip  # Triton signature: arguments grouped as in the engines' kernel
    tile_m, tile_n = _tile_of(tl.program_id(0), M, N, GROUP_SIZE_M, BLOCK_SIZE_M, BLOCK_SIZE_N)
    split = tl.program_id(1)
    k_blocks = tl.cdiv(K, BLOCK_SIZE_K)
    per_split = tl.cdiv(k_blocks, SPLIT_K)
    k_first = split * per_split
    k_last = tl.minimum(k_first + per_split, k_blocks)
    acc = _accumulate(
        A, B, As, Bs, tile_m, tile_n, M, N, K, k_first, k_last, group_n, group_k,
        stride_am, stride_ak, stride_bk, stride_bn, stride_As_m, stride_As_k, stride_Bs_k,
        stride_Bs_n, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K,
    )  # fmt: skip  # the kernel's arguments, grouped as its signature
    n_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    tile = tile_m * tl.cdiv(N, BLOCK_SIZE_N) + tile_n
    tile_elems = BLOCK_SIZE_M * BLOCK_SIZE_N
    offs = tl.arange(0, BLOCK_SIZE_M)[:, None] * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)[None, :]
    tl.store(P + (split * n_tiles + tile).to(tl.int64) * tile_elems + offs, acc)
    if SERIAL:
        # every thread's partial is stored before one thread publishes the arrival (release);
        # the last arrival (acquire) adds the other partials and resets the counter
        tl.debug_barrier()
        arrived = tl.atomic_add(Locks + tile, 1, sem="acq_rel")
        if arrived == SPLIT_K - 1:
            for other in range(0, SPLIT_K):
                if other != split:
                    src = P + (other * n_tiles + tile).to(tl.int64) * tile_elems + offs
                    acc += tl.load(src, cache_modifier=".cg")
            _store_tile(
                C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N
            )
            tl.atomic_xchg(Locks + tile, 0)


@triton.jit(do_not_specialize=["M", "SPLIT_K"])
def _splitk_reduce(
    P, C, M, N, stride_cm, stride_cn, SPLIT_K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
):  # fmt: skip  # Triton signature: arguments grouped as in the engines' kernel
    tile = tl.program_id(0)
    n_cols = tl.cdiv(N, BLOCK_SIZE_N)
    n_tiles = tl.cdiv(M, BLOCK_SIZE_M) * n_cols
    tile_elems = BLOCK_SIZE_M * BLOCK_SIZE_N
    offs = tl.arange(0, BLOCK_SIZE_M)[:, None] * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)[None, :]
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for split in range(0, SPLIT_K):
        acc += tl.load(P + (split * n_tiles + tile).to(tl.int64) * tile_elems + offs)
    _store_tile(
        C,
        acc,
        tile // n_cols,
        tile % n_cols,
        M,
        N,
        stride_cm,
        stride_cn,
        BLOCK_SIZE_M,
        BLOCK_SIZE_N,
    )


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Operands:
    """One input/output set on the GPU: A [M,K] fp8, As [M,K/128] fp32, B [N,K] fp8,
    Bs [⌈N/128⌉,K/128] fp32, C [M,N] bf16."""

    a: Any
    a_s: Any
    b: Any
    b_s: Any
    c: Any

    def rows(self, m: int) -> Operands:
        """The first ``m`` rows of A, As and C (views)."""
        return Operands(self.a[:m], self.a_s[:m], self.b, self.b_s, self.c[:m])


@dataclass
class SplitWorkspace:
    """fp32 partials and per-tile arrival counters for split-K launches (counters start at 0
    and the serial kernel leaves them at 0)."""

    partials: Any
    locks: Any


def workspace_elems(cfg: KernelConfig, m: int, n: int) -> tuple[int, int]:
    """(fp32 partial elements, tile counters) a split-K launch of ``cfg`` at (M, N) needs."""
    tiles = _cdiv(m, cfg.block_m) * _cdiv(n, cfg.block_n)
    return cfg.split_k * tiles * cfg.block_m * cfg.block_n, tiles


def make_workspace(partial_elems: int, tiles: int, device: Any) -> SplitWorkspace:
    return SplitWorkspace(
        torch.empty(max(partial_elems, 1), dtype=torch.float32, device=device),
        torch.zeros(max(tiles, 1), dtype=torch.int32, device=device),
    )


def make_operands(
    m: int, n: int, k: int, *, device: Any, gen: Any | None = None, varied: bool = False
) -> Operands:
    """Random operands (never zeros). ``varied``: scales spread over 2^-12 … 2^-2 and values
    over the whole fp8 range, for the reference check; otherwise moderate values for timing."""
    kb, nb = _cdiv(k, GROUP), _cdiv(n, GROUP)
    a32 = torch.randn(m, k, device=device, generator=gen)
    b32 = torch.randn(n, k, device=device, generator=gen)
    if varied:
        a32 = a32 * torch.exp2(torch.rand(m, 1, device=device, generator=gen) * 6)
        b32 = b32 * torch.exp2(torch.rand(n, 1, device=device, generator=gen) * 6)
        a_s = torch.exp2(torch.rand(m, kb, device=device, generator=gen) * -10 - 2)
        b_s = torch.exp2(torch.rand(nb, kb, device=device, generator=gen) * -10 - 2)
    else:
        a_s = torch.rand(m, kb, device=device, generator=gen) * 0.01 + 0.001
        b_s = torch.rand(nb, kb, device=device, generator=gen) * 0.01 + 0.001
    a = a32.clamp(-FP8_MAX, FP8_MAX).to(FP8)
    b = b32.clamp(-FP8_MAX, FP8_MAX).to(FP8)
    c = torch.empty(m, n, dtype=torch.bfloat16, device=device)
    return Operands(a, a_s.contiguous(), b, b_s.contiguous(), c)


def _matmul_args(m: int, n: int, k: int, ops: Any) -> list[Any]:
    """Pointer/shape/stride arguments in the kernel's order. ``ops`` is an Operands or, for the
    compile warm-up, a tuple of dtypes (Triton substitutes aligned mock tensors)."""
    ptrs = [ops.a, ops.b, ops.c, ops.a_s, ops.b_s] if isinstance(ops, Operands) else list(ops)
    kb = _cdiv(k, GROUP)
    # contiguous A [M,K], B [N,K], C [M,N], As [M,kb], Bs [nb,kb] (the engines' layout)
    strides = [k, 1, 1, k, n, 1, kb, 1, 1, kb]
    return [*ptrs, m, n, k, GROUP, GROUP, *strides]


def _meta(cfg: KernelConfig) -> dict[str, int]:
    """The compile-time parameters of ``cfg`` (GROUP_SIZE_M and split are runtime arguments)."""
    return {k: v for k, v in cfg.to_engine().items() if k != "GROUP_SIZE_M"}


def launch(
    cfg: KernelConfig,
    ops: Operands,
    m: int,
    *,
    workspace: SplitWorkspace | None = None,
    serial: bool | None = None,
) -> None:
    """Launch ``cfg`` once on ``ops`` (A, As, C already ``m`` rows or more; only m used).
    ``serial`` picks the split-K reduction (default :data:`SPLIT_SERIAL`)."""
    serial = SPLIT_SERIAL if serial is None else serial
    n, k = ops.b.shape
    tiles = _cdiv(m, cfg.block_m) * _cdiv(n, cfg.block_n)
    args = _matmul_args(m, n, k, ops)
    meta = _meta(cfg)
    if cfg.split_k == 1:
        _w8a8_block_fp8_matmul[(tiles,)](*args, cfg.group_m, **meta)
        return
    if workspace is None:
        raise ValueError("a split-K launch needs a SplitWorkspace")
    p, locks = workspace.partials, workspace.locks
    args = [*args[:5], p, locks, *args[5:]]
    _w8a8_block_fp8_matmul_splitk[(tiles, cfg.split_k)](
        *args, cfg.group_m, cfg.split_k, SERIAL=serial, **meta
    )
    if not serial:
        _splitk_reduce[(tiles,)](
            p,
            ops.c,
            m,
            n,
            ops.c.stride(0),
            ops.c.stride(1),
            cfg.split_k,
            BLOCK_SIZE_M=cfg.block_m,
            BLOCK_SIZE_N=cfg.block_n,
            num_warps=4,
        )


def launch_engine_spec(cfg: KernelConfig, ops: Operands, m: int) -> None:
    """Launch ``cfg`` through the engines' specialization of the kernel (see
    ``_w8a8_block_fp8_matmul_engine_spec``); engine-usable configs only."""
    n, k = ops.b.shape
    tiles = _cdiv(m, cfg.block_m) * _cdiv(n, cfg.block_n)
    _w8a8_block_fp8_matmul_engine_spec[(tiles,)](
        *_matmul_args(m, n, k, ops), GROUP_SIZE_M=cfg.group_m, **_meta(cfg)
    )


def warm(cfg: KernelConfig, n: int, k: int, *, serial: bool | None = None) -> None:
    """Compile ``cfg`` for shapes of (N, K)'s specialization class into Triton's cache, without
    a launch (used by the parallel compile pool)."""
    serial = SPLIT_SERIAL if serial is None else serial
    ptr_dtypes = (FP8, FP8, torch.bfloat16, torch.float32, torch.float32)
    args = _matmul_args(16, n, k, ptr_dtypes)
    meta = _meta(cfg)
    if cfg.split_k == 1:
        _w8a8_block_fp8_matmul.warmup(*args, cfg.group_m, grid=(1,), **meta)
        return
    args = [*args[:5], torch.float32, torch.int32, *args[5:]]
    _w8a8_block_fp8_matmul_splitk.warmup(
        *args, cfg.group_m, cfg.split_k, SERIAL=serial, grid=(1, 1), **meta
    )


def reference_check(
    cfg: KernelConfig, m: int, n: int, k: int, *, seed: int, serial: bool | None = None
) -> float:
    """Relative error ‖C − ref‖_F / ‖ref‖_F of ``cfg`` on fresh random operands with varied
    scales, against the float32 product of the dequantized operands; C (and the split-K
    partials) are filled with NaN first, so an unwritten element yields ``inf``."""
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    ops = make_operands(m, n, k, device=dev, gen=gen, varied=True)
    ops.c.fill_(float("nan"))
    ws = None
    if cfg.split_k > 1:
        pe, tiles = workspace_elems(cfg, m, n)
        ws = make_workspace(pe, tiles, dev)
        ws.partials.fill_(float("nan"))
    serial = SPLIT_SERIAL if serial is None else serial
    launch(cfg, ops, m, workspace=ws, serial=serial)
    torch.cuda.synchronize()
    a_deq = ops.a.float() * ops.a_s.repeat_interleave(GROUP, dim=1)[:, :k]
    b_scale = ops.b_s.repeat_interleave(GROUP, dim=0)[:n].repeat_interleave(GROUP, dim=1)[:, :k]
    b_deq = ops.b.float() * b_scale
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = a_deq @ b_deq.t()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    out = ops.c.float()
    if not bool(torch.isfinite(out).all()):
        return float("inf")
    if ws is not None and serial and bool((ws.locks != 0).any()):
        return float("inf")  # a counter left non-zero would corrupt the next launch
    return float(torch.linalg.norm(out - ref) / torch.linalg.norm(ref))

"""Time to a defensible verdict: fixed counts vs a 10x count vs adaptive + sequential A/B.

1. Record long closed-loop runs on the reference engine with ``--jitter-ms`` (SIMULATED) at
   C=1, 8 and 32, with inferlab's own client.
2. Build A/B pairs with a known true effect (0% = null, 2, 5, 10, 30%: the candidate's TTFT
   and token gaps divided by 1 + effect, so its TPOT is that much lower and its throughput about
   that much higher): each side is a fresh stream drawn from the recording by a block resampling
   that keeps each user's requests in their time order (blocks of consecutive requests of one
   user, times rebuilt back to back), so the autocorrelation inside a block survives.
3. Decide each pair three ways, with inferlab's own statistics: a fixed count per side (as
   peers run), a count 10x larger (the reference verdict), and the campaign's sequential path:
   the baseline measured to the cap, then a sequential A/B of the candidate against it
   (``load.adaptive``'s rules asked by ``load.stopping.RuleMonitor``, fed the same light summaries a live run streams).
4. Validate the resampling against live pairs measured end to end (``--live`` null and 10%
   pairs at C=8, each side its own sim server).

    .venv/bin/python benchmarks/time_to_verdict.py [--null 200] [--per-effect 50] [--live 20]
        [--min-effect 0.02,0.01,0.03] [--save LANES.json | --load LANES.json[.xz]]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import heapq
import json
import lzma
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from inferlab.config.bench import BenchConfig, WorkloadSpec  # noqa: E402
from inferlab.load.adaptive import (  # noqa: E402
    BaselineRef,
    PrecisionRule,
    SequentialRule,
    baseline_ref,
)
from inferlab.load.bench import run_bench  # noqa: E402
from inferlab.load.progress import LightRecord  # noqa: E402
from inferlab.load.stopping import RuleMonitor, StoppingRule  # noqa: E402
from inferlab.sim.tokenizer import WordTokenizer  # noqa: E402
from inferlab.stats.compare import (  # noqa: E402
    HIGHER_IS_BETTER,
    ThroughputSample,
    compare_samples,
    compare_throughput,
)
from inferlab.stats.stopping import (  # noqa: E402
    batch_means,
    block_bootstrap_median,
    block_length,
    span_batch_rates,
)
from inferlab.stats.verdict import (  # noqa: E402
    Rule,
    Verdict,
    decide,
)
from support.simproc import start_sim  # noqa: E402

SIM = ("--ttft-ms", "10", "--itl-ms", "2", "--jitter-ms", "1")
# 64 tokens: the engine paces on 1 ms slots, so a request's TPOT lies on a grid of
# 1 ms / (tokens - 1): with 16 tokens that grid is 3.3% of a 2 ms TPOT, larger than the 2%
# effect and the minimum effect (a median that moves by one grid step reads as a 3.3% change);
# with 64 it is 0.8%
TOKENS = 64
EFFECTS = (0.0, 0.02, 0.05, 0.10, 0.30)
LEVELS = (1, 8, 32)
FIXED = 200  # requests per side, as a peer's fixed-count run would
PRECISION = 0.05
MIN_REQ, MAX_REQ, LOOKS = 50, 800, 4
# the smallest change claimed, by all three ways (--min-effect): the tool's default (2%, which is
# also one of the effects, so every verdict there is a coin flip) and one on each side of it
MIN_EFFECTS = (0.02, 0.01, 0.03)
BLOCK = 8  # requests per resampled block (one user's consecutive requests)


@dataclass(frozen=True)
class Req:
    """One recorded request's shape (ns): gap before its send, TTFT, first→last token, tail."""

    gap: int
    ttft: int
    body: int
    tail: int
    tokens: int


def _lanes(records: Sequence[Any], c: int) -> list[list[Req]]:
    """Split a closed-loop run into C back-to-back user lanes (each send follows its lane's
    latest end)."""
    ends = [0] * c
    lanes: list[list[Req]] = [[] for _ in range(c)]
    for r in sorted(
        (r for r in records if r.ok and r.event_ns and not r.warmup), key=lambda r: r.send_ns
    ):
        ok = [i for i in range(c) if ends[i] <= r.send_ns]
        i = max(ok, key=lambda j: ends[j]) if ok else min(range(c), key=lambda j: ends[j])
        gap = r.send_ns - ends[i] if ends[i] else 0
        lanes[i].append(
            Req(
                max(0, min(gap, 5_000_000)),
                r.event_ns[0] - r.send_ns,
                r.event_ns[-1] - r.event_ns[0],
                max(0, r.end_ns - r.event_ns[-1]),
                r.output_tokens,
            )
        )
        ends[i] = r.end_ns
    return [ln for ln in lanes if len(ln) > BLOCK]


def stream(
    lanes: list[list[Req]], c: int, n: int, effect: float, rng: np.random.Generator
) -> list[LightRecord]:
    """``n`` requests of C synthetic users, each built from random blocks of recorded lanes;
    TTFT and token gaps divided by 1 + ``effect``. Sorted by end time; the first C are ramp-up."""
    per = math.ceil(n / c) + 2
    out: list[LightRecord] = []
    k = 1.0 + effect
    for u in range(c):
        t, made = 0, 0
        while made < per:
            lane = lanes[int(rng.integers(len(lanes)))]
            start = int(rng.integers(len(lane) - BLOCK + 1))
            for q in lane[start : start + BLOCK]:
                send = t + q.gap
                first = send + round(q.ttft / k)
                last = first + round(q.body / k)
                end = last + q.tail
                out.append(
                    LightRecord(u * 10**6 + made, send, end, True, first, last, q.tokens, made == 0)
                )
                t, made = end, made + 1
                if made >= per:
                    break
    out.sort(key=lambda r: r.end_ns)
    return out


def _verdicts_fixed(base: list[LightRecord], cand: list[LightRecord]) -> dict[str, Verdict]:
    """inferlab compare's verdicts on two fixed-count samples, before the minimum effect
    (``_claims`` applies it: the interval and p do not depend on it)."""
    tb = [x for x in (r.tpot_ms for r in base) if x is not None]
    tc = [x for x in (r.tpot_ms for r in cand) if x is not None]

    def tput(rs: list[LightRecord]) -> ThroughputSample:
        t0, t1 = min(r.send_ns for r in rs), max(r.end_ns for r in rs)
        rates = span_batch_rates(
            [r.first_ns for r in rs], [r.last_ns for r in rs], [r.tokens for r in rs], t0, t1, 10
        )
        return ThroughputSample((sum(r.tokens for r in rs) / ((t1 - t0) / 1e9),), tuple(rates))

    return {
        "tpot_ms": compare_samples(
            "tpot_ms", [tb], [tc], rule=Rule(resamples=1000, min_effect=0.0)
        ),
        "output_tok_s": compare_throughput(tput(base), tput(cand), rule=Rule(min_effect=0.0)),
    }


def _claims(verdicts: dict[str, Verdict], min_effect: float) -> dict[str, str]:
    """The claims of ``compare --min-effect`` from verdicts made with no minimum effect."""
    return {
        m: decide(
            v.ratio, v.p_value, higher_is_better=HIGHER_IS_BETTER[m], min_effect=min_effect
        ).claim
        for m, v in verdicts.items()
    }


def _first(s: list[LightRecord], n: int, c: int) -> list[LightRecord]:
    """What a fixed-count run of ``n`` requests measures: the n earliest sends."""
    return sorted(s, key=lambda r: r.send_ns)[:n]


def _inflight_min(s: list[LightRecord]) -> list[int | None]:
    """For each completion (in ``s``'s end order): the earliest send still in flight then."""
    by_send = sorted(s, key=lambda r: r.send_ns)
    heap: list[tuple[int, int]] = []
    out: list[int | None] = []
    j = 0
    for r in s:
        while j < len(by_send) and by_send[j].send_ns <= r.end_ns:
            heapq.heappush(heap, (by_send[j].send_ns, by_send[j].end_ns))
            j += 1
        while heap and heap[0][1] <= r.end_ns:
            heapq.heappop(heap)
        out.append(heap[0][0] if heap else None)
    return out


def _run_monitor(
    s: list[LightRecord], rule: StoppingRule, c: int, seed: int
) -> tuple[RuleMonitor, int, int]:
    """Feed a stream to a monitor of ``rule`` in completion order, as the workers would;
    returns it, the requests issued when it stopped and that time (ns)."""
    mon = RuleMonitor(rule, c, MAX_REQ, None, seed)
    for i, (r, inflight) in enumerate(zip(s, _inflight_min(s))):
        mon.progress(0, ([r], inflight))
        if mon.should_finish(i + 1):
            return mon, sum(1 for q in s if q.send_ns <= r.end_ns), r.end_ns
    return mon, len(s), s[-1].end_ns


def _ref(s: list[LightRecord], until_ns: int, c: int) -> BaselineRef:
    done = [r for r in s if r.end_ns <= until_ns]
    counted = sorted((r for r in done if not r.ramp), key=lambda r: r.send_ns)
    tp = [x for x in (r.tpot_ms for r in counted) if x is not None]
    w0 = max(r.end_ns for r in done if r.ramp)
    rates = span_batch_rates(
        [r.first_ns for r in done],
        [r.last_ns for r in done],
        [r.tokens for r in done],
        w0,
        until_ns,
    )
    return BaselineRef(
        "baseline", block_bootstrap_median(tp, block_length(len(tp), c)), batch_means(rates)
    )


def _adaptive(
    base: list[LightRecord], cand: list[LightRecord], c: int, seed: int, min_effect: float
) -> tuple[dict[str, str], int, float, str]:
    reference = PrecisionRule(PRECISION, MIN_REQ, MAX_REQ, stop_on_precision=False)
    mon_b, n_b, t_b = _run_monitor(base, reference, c, seed)
    ref = _ref(base, t_b, c)
    seq = SequentialRule(ref, MAX_REQ, PRECISION, looks=LOOKS, min_effect=min_effect)
    mon_c, n_c, t_c = _run_monitor(cand, seq, c, seed)
    metrics = (seq.sequential or {}).get("metrics", {})
    claims = {m: metrics.get(m, {}).get("status", "open") for m in ("tpot_ms", "output_tok_s")}
    claims = {m: v if v in ("better", "worse") else "~" for m, v in claims.items()}
    return claims, n_b + n_c, (t_b + t_c) / 1e9, f"{mon_c.reason}@{seq.look}"


def record(tok: Path, c: int, n: int) -> list[list[Req]]:
    with start_sim(*SIM) as sim:
        cfg = BenchConfig(
            url=sim.url,
            engine="sim",
            concurrency=[c],
            requests=n,
            tokenizer=tok,
            lag_limit_ms=1e6,
            workload=WorkloadSpec(input_tokens=16, output_tokens=TOKENS),
        )
        res = run_bench(cfg)
    return _lanes(res.points[0].records, c)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, mid - half), min(1.0, mid + half))


def _end_s(s: list[LightRecord]) -> float:
    return max(r.end_ns for r in s) / 1e9


def _pair(
    lanes: list[list[Req]], c: int, e: float, rng: np.random.Generator, seed: int
) -> list[dict[str, Any]]:
    """One A/B pair decided three ways at each minimum effect, and a second, independent 10×
    pair (``ref2``: how often the reference agrees with itself)."""
    n = 10 * FIXED + 2 * c
    base, cand = stream(lanes, c, n, 0.0, rng), stream(lanes, c, n, e, rng)
    base2, cand2 = stream(lanes, c, n, 0.0, rng), stream(lanes, c, n, e, rng)
    fb, fc = _first(base, FIXED, c), _first(cand, FIXED, c)
    rb, rc = _first(base, 10 * FIXED, c), _first(cand, 10 * FIXED, c)
    v_ref, v_fixed = _verdicts_fixed(rb, rc), _verdicts_fixed(fb, fc)
    v_ref2 = _verdicts_fixed(_first(base2, 10 * FIXED, c), _first(cand2, 10 * FIXED, c))
    rows = []
    for me in MIN_EFFECTS:
        ad, n_ad, t_ad, how = _adaptive(base, cand, c, seed, me)
        rows.append(
            dict(
                c=c,
                effect=e,
                me=me,
                ref=_claims(v_ref, me),
                ref2=_claims(v_ref2, me),
                fixed=_claims(v_fixed, me),
                adaptive=ad,
                n_adaptive=n_ad,
                t_fixed=_end_s(fb) + _end_s(fc),
                t_ref=_end_s(rb) + _end_s(rc),
                t_adaptive=t_ad,
                how=how,
            )
        )
    return rows


def simulate(
    lanes: dict[int, list[list[Req]]], n_null: int, n_eff: int, seed: int
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for c in LEVELS:
        for e in EFFECTS:
            for i in range(n_null if e == 0 else n_eff):
                rows += _pair(lanes[c], c, e, rng, seed + i)
    return rows


def live(tok: Path, pairs: int) -> list[dict[str, Any]]:
    """Null and 10% pairs measured end to end at C=8: a baseline sim and two candidate sims."""
    c = 8
    fast = ("--ttft-ms", f"{10 / 1.1:.4f}", "--itl-ms", f"{2 / 1.1:.4f}", "--jitter-ms", "1")
    base_kw: dict[str, Any] = dict(
        engine="sim",
        concurrency=[c],
        requests="auto",
        tokenizer=tok,
        workload=WorkloadSpec(input_tokens=16, output_tokens=TOKENS),
        precision=PRECISION,
        min_requests=MIN_REQ,
        max_requests=MAX_REQ,
        looks=LOOKS,
        min_effect=MIN_EFFECTS[0],
        lag_limit_ms=1e6,
    )
    rows = []
    with start_sim(*SIM) as b, start_sim(*SIM) as same, start_sim(*fast) as quick:
        for i in range(2 * pairs):
            effect, cand = (0.0, same) if i % 2 == 0 else (0.10, quick)
            t0 = time.monotonic()
            bp = run_bench(BenchConfig(url=b.url, seed=i, stop_on_precision=False, **base_kw))
            bp = bp.points[0]
            assert bp.stop is not None
            ref = baseline_ref("baseline", bp.records, bp.stop.window_ns, c)
            assert ref is not None
            cp = run_bench(
                BenchConfig(url=cand.url, seed=1000 + i, **base_kw), baselines={f"C={c}": ref}
            ).points[0]
            assert cp.stop is not None
            metrics = (cp.stop.sequential or {}).get("metrics", {})
            claims = {
                m: metrics.get(m, {}).get("status", "open") for m in ("tpot_ms", "output_tok_s")
            }
            claims = {m: v if v in ("better", "worse") else "~" for m, v in claims.items()}
            issued = len([r for r in bp.records if not r.warmup]) + len(
                [r for r in cp.records if not r.warmup]
            )
            rows.append(
                dict(
                    effect=effect,
                    adaptive=claims,
                    n=issued,
                    wall=time.monotonic() - t0,
                    how=f"{cp.stop.reason}@{cp.stop.look}",
                )
            )
    return rows


def _any_claim(cl: dict[str, str]) -> bool:
    return any(v != "~" for v in cl.values())


def report(rows: list[dict[str, Any]], live_rows: list[dict[str, Any]], took: float) -> list[str]:
    load = os.getloadavg()
    out = [
        f"## Time to a defensible verdict (`benchmarks/time_to_verdict.py`, {dt.datetime.now():%Y-%m-%d %H:%M})",
        "",
        f"SIMULATED engine (`sim serve {' '.join(SIM)}`, {TOKENS} output tokens), inferlab's client; "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (2 CPUs, shared); {took / 60:.1f} min. "
        f"Fixed: {FIXED} requests per side; reference: {10 * FIXED} per side; adaptive: baseline "
        f"measured to the cap ({MAX_REQ}), candidate by sequential A/B, "
        f"{LOOKS} looks at k/{LOOKS} of {MAX_REQ}. Verdict = the claims on median TPOT and output "
        'throughput (better / worse / ~), both must match. "10× again": a second, independent '
        "10× pair of the same effect: how often the reference agrees with itself (the ceiling).",
    ]
    for me in MIN_EFFECTS:
        out += _table([r for r in rows if r["me"] == me], me)
    if live_rows:
        out.append(_live_line(rows, live_rows))
    return out


def _table(rows: list[dict[str, Any]], me: float) -> list[str]:
    out = [
        "",
        f"**Minimum effect {me:.0%}** (a change is claimed when p < 0.05 and |change| ≥ {me:.0%}):",
        "",
        "| C | effect | pairs | adaptive requests / pair (mean) | 10× requests | ratio | adaptive = 10× | fixed = 10× | 10× again = 10× | wall s: adaptive / fixed / 10× |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in LEVELS:
        for e in EFFECTS:
            rs = [r for r in rows if r["c"] == c and r["effect"] == e]
            if not rs:
                continue
            n_ad = float(np.mean([r["n_adaptive"] for r in rs]))
            agree = {
                k: sum(r[k] == r["ref"] for r in rs) / len(rs)
                for k in ("adaptive", "fixed", "ref2")
            }
            walls = [np.mean([r[k] for r in rs]) for k in ("t_adaptive", "t_fixed", "t_ref")]
            out.append(
                f"| {c} | {e:.0%} | {len(rs)} | {n_ad:.0f} | {20 * FIXED} | {20 * FIXED / n_ad:.1f}× | "
                f"{agree['adaptive']:.0%} | {agree['fixed']:.0%} | {agree['ref2']:.0%} | "
                f"{walls[0]:.1f} / {walls[1]:.1f} / {walls[2]:.1f} |"
            )
    allr = len(rows)
    n_all = float(np.mean([r["n_adaptive"] for r in rows]))
    agree_all = sum(r["adaptive"] == r["ref"] for r in rows)
    ceiling = sum(r["ref2"] == r["ref"] for r in rows)
    per_metric = {
        k: sum(r[k][m] == r["ref"][m] for r in rows for m in r["ref"]) / (2 * allr)
        for k in ("adaptive", "ref2")
    }
    null = [r for r in rows if r["effect"] == 0]
    fp = sum(_any_claim(r["adaptive"]) for r in null)
    fp_f = sum(_any_claim(r["fixed"]) for r in null)
    lo, hi = wilson(fp, len(null))
    lo_f, hi_f = wilson(fp_f, len(null))
    alo, ahi = wilson(agree_all, allr)
    return [
        *out,
        "",
        f"- All {allr} pairs: adaptive used {n_all:.0f} requests per verdict on average, "
        f"{20 * FIXED / n_all:.1f}× fewer than the 10× run, with its verdict in "
        f"{agree_all / allr:.1%} [{alo:.1%}, {ahi:.1%}] of pairs (target: ≥ 3× fewer, ≥ 95%); "
        f"a second 10× run had it in {ceiling / allr:.1%}. Counted per metric (each of the "
        f"{2 * allr} verdicts on its own): adaptive {per_metric['adaptive']:.1%}, a second 10× "
        f"run {per_metric['ref2']:.1%}.",
        f"- False positives on the {len(null)} null pairs (any claim on either metric): adaptive "
        f"{fp} = {fp / len(null):.1%} [{lo:.1%}, {hi:.1%}] (Wilson 95%); fixed {fp_f} = "
        f"{fp_f / len(null):.1%} [{lo_f:.1%}, {hi_f:.1%}] (target ≤ 5%, upper bound ≤ 8%).",
    ]


def _live_line(rows: list[dict[str, Any]], live_rows: list[dict[str, Any]]) -> str:
    rows = [r for r in rows if r["me"] == MIN_EFFECTS[0]]
    ln = [r for r in live_rows if r["effect"] == 0]
    le = [r for r in live_rows if r["effect"] > 0]
    sim8n = [r for r in rows if r["c"] == 8 and r["effect"] == 0]
    sim8e = [r for r in rows if r["c"] == 8 and r["effect"] == 0.10]
    return (
        f"- Live check at C=8, minimum effect {MIN_EFFECTS[0]:.0%} (measured end to end, three "
        f"sim servers): null pairs {sum(_any_claim(r['adaptive']) for r in ln)}/{len(ln)} claimed, "
        f"{np.mean([r['n'] for r in ln]):.0f} requests per verdict "
        f"(resampled: {sum(_any_claim(r['adaptive']) for r in sim8n)}/{len(sim8n)}, "
        f"{np.mean([r['n_adaptive'] for r in sim8n]):.0f}); 10% pairs "
        f"{sum(r['adaptive']['tpot_ms'] == 'better' for r in le)}/{len(le)} found better on TPOT, "
        f"{np.mean([r['n'] for r in le]):.0f} requests, {np.mean([r['wall'] for r in le]):.1f} s "
        f"per pair (resampled: {sum(r['adaptive']['tpot_ms'] == 'better' for r in sim8e)}/{len(sim8e)}, "
        f"{np.mean([r['n_adaptive'] for r in sim8e]):.0f}). How the candidates stopped (live): "
        + ", ".join(f"{k} {v}" for k, v in sorted(_count(r["how"] for r in live_rows).items()))
        + "."
    )


def _count(xs: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--null", type=int, default=200, help="null pairs per concurrency")
    ap.add_argument("--per-effect", type=int, default=50, help="pairs per non-null effect and C")
    ap.add_argument("--live", type=int, default=20, help="live null pairs and 10%% pairs (C=8)")
    ap.add_argument("--record", type=int, default=2400, help="requests recorded per concurrency")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-requests", type=int, default=MAX_REQ, help="adaptive cap per side")
    ap.add_argument(
        "--min-effect",
        default=",".join(f"{m:g}" for m in MIN_EFFECTS),
        help="smallest change claimed, comma-separated: one table each",
    )
    ap.add_argument("--save", type=Path, help="write the recorded lanes here (JSON)")
    ap.add_argument("--load", type=Path, help="resample lanes recorded by --save (no recording)")
    a = ap.parse_args()
    globals()["MAX_REQ"] = a.max_requests
    globals()["MIN_EFFECTS"] = tuple(float(m) for m in a.min_effect.split(","))
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tok = WordTokenizer().save_hf(Path(tmp))
        lanes = load_lanes(a.load) if a.load else {c: record(tok, c, a.record) for c in LEVELS}
        if a.save:
            save_lanes(a.save, lanes)
        rows = simulate(lanes, a.null, a.per_effect, a.seed)
        live_rows = live(tok, a.live) if a.live else []
    print("\n".join(report(rows, live_rows, time.monotonic() - t0)))


def save_lanes(path: Path, lanes: dict[int, list[list[Req]]]) -> None:
    """The recording, so that later runs can resample the same streams (``--load``)."""
    data = {str(c): [[dataclasses.astuple(q) for q in ln] for ln in ls] for c, ls in lanes.items()}
    path.write_text(json.dumps(data))


def load_lanes(path: Path) -> dict[int, list[list[Req]]]:
    """A ``--save`` recording, plain or packed with xz (the committed one is ``.json.xz``)."""
    with lzma.open(path, "rt") if path.suffix == ".xz" else path.open() as f:
        data = json.load(f)
    return {int(c): [[Req(*q) for q in ln] for ln in ls] for c, ls in data.items()}


if __name__ == "__main__":
    main()

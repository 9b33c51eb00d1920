"""The lossy gate with every logprob against top-k, on two running servers (issue 42, item 6).

The reference server's greedy continuations of the gate's seeded prompts are scored with
``top_k`` logprobs (vLLM: launch both with ``--max-logprobs`` at least that), the config's the
same, and the gate's own code decides on maps cut to each of ``--cut`` (the top-c of a full
map is what an engine lists at c, less vLLM's scored-token extra): the KL's lumped lower
bound, its gated upper bound and the tail. With the whole vocabulary the bound is the exact KL.

    python benchmarks/gate_full_logprobs.py REF_URL CFG_URL [--model tiny] [--top-k 1024]
        [--prompts 16] [--cut 20 100 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from inferlab.config.lossy import LossyGate
from inferlab.load.http import Endpoint, HttpClient
from inferlab.verify.agreement import prompt_figures
from inferlab.verify.gate import build_reference, decide, sequential
from inferlab.verify.scorers import get_scorer


def _client(url: str) -> HttpClient:
    return HttpClient(
        Endpoint.parse(url), timeout_s=600, stall_timeout_s=300, max_event_bytes=64 << 20
    )


def _cut(m: dict[str, float], k: int) -> dict[str, float]:
    return dict(sorted(m.items(), key=lambda kv: -kv[1])[:k])


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The reference, the config's maps, and the gate's figures at each cut."""
    lim = LossyGate(
        max_kl=0.01, min_top1=0.98, prompts=args.prompts, max_prompts=args.prompts,
        tokens=32, top_k=args.top_k,
    )  # fmt: skip
    ref_c, cfg_c = _client(args.ref), _client(args.cfg)
    t0 = time.monotonic()
    ref = await build_reference(ref_c, args.model, lim)
    t1 = time.monotonic()
    score = get_scorer("echo")
    mine = [await score(cfg_c, args.model, ref.prompts[i], ref.forced(i), args.top_k)
            for i in range(len(ref.prompts))]  # fmt: skip
    t2 = time.monotonic()
    ref_c.close()
    cfg_c.close()
    out: dict[str, Any] = {"reference_s": t1 - t0, "scoring_s": t2 - t1,
                           "listed_min": min(len(m) for ps in ref.positions for m in ps)}  # fmt: skip
    for k in args.cut:
        figs = [prompt_figures([_cut(m, k) for m in b], [_cut(m, k) for m in q], top_k=k)
                for b, q in zip(ref.positions, mine)]  # fmt: skip
        a, stopped = sequential(figs, lim)
        verdict, msg, _ = decide(a, lim, width_met=stopped)
        out[f"top-{k}"] = {"verdict": verdict, "message": msg}
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref")
    ap.add_argument("cfg")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--top-k", type=int, default=1024)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--cut", type=int, nargs="+", default=[20, 100, 1024])
    print(json.dumps(asyncio.run(measure(ap.parse_args(argv))), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

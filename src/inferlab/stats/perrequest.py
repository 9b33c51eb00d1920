"""Per-request samples of the latency metrics (ms; per-user speed in tok/s): what one
``RequestRecord`` contributes to a metric (none, one, or one per token gap)."""

from __future__ import annotations

from inferlab.records import RequestRecord

__all__ = [
    "e2e_samples",
    "icl_ms",
    "itl_ms",
    "tpot_ms",
    "tpot_samples",
    "ttft_samples",
    "user_tok_s_samples",
]

_NS_PER_MS = 1e6


def tpot_ms(rec: RequestRecord) -> float | None:
    """(E2E − TTFT) / (output_tokens − 1), ms; None with fewer than 2 output tokens."""
    if not rec.event_ns or rec.output_tokens < 2:
        return None
    return (rec.event_ns[-1] - rec.event_ns[0]) / _NS_PER_MS / (rec.output_tokens - 1)


def itl_ms(rec: RequestRecord) -> list[float]:
    """Per-token gaps, ms: an event carrying k tokens after a gap g contributes k gaps of g/k.
    Tokens of the first event are covered by TTFT and add no gap."""
    out: list[float] = []
    ev, tok = rec.event_ns, rec.event_tokens
    for i in range(1, len(ev)):
        k = tok[i] if i < len(tok) and tok[i] > 0 else 1
        g = (ev[i] - ev[i - 1]) / _NS_PER_MS / k
        out.extend([g] * k)
    return out


def icl_ms(rec: RequestRecord) -> list[float]:
    """Per-event (chunk) gaps, ms, whatever the number of tokens each event carried."""
    ev = rec.event_ns
    return [(ev[i] - ev[i - 1]) / _NS_PER_MS for i in range(1, len(ev))]


def ttft_samples(rec: RequestRecord) -> list[float]:
    return [rec.ttft_ns / _NS_PER_MS] if rec.ttft_ns is not None else []


def e2e_samples(rec: RequestRecord) -> list[float]:
    return [rec.e2e_ns / _NS_PER_MS] if rec.e2e_ns is not None else []


def tpot_samples(rec: RequestRecord) -> list[float]:
    t = tpot_ms(rec)
    return [] if t is None else [t]


def user_tok_s_samples(rec: RequestRecord) -> list[float]:
    return [1000.0 / t for t in tpot_samples(rec) if t > 0]

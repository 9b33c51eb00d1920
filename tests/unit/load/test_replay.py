"""Trace replay against the reference engine (real HTTP on loopback): requests scheduled at
the trace's timestamps ÷ speed, their lateness stored and judged (on the model clock, with
injected lateness), lengths the engine counts as the trace's, the context limit, and a
malformed trace that sends nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConfigError
from inferlab.load.bench import run_bench
from inferlab.load.traces import read_trace, slice_trace
from inferlab.sim.tokenizer import WordTokenizer
from support.simproc import SimFactory

MOONCAKE = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "mooncake_sample.jsonl"
FAST = ("--ttft-ms", "1", "--itl-ms", "0.2")


def _cfg(url: str, tmp_path: Path, **kw: object) -> BenchConfig:
    fields: dict[str, object] = {"trace": MOONCAKE, "speed": [8.0], "trace_limit": 16}
    fields.update(kw)
    return BenchConfig(
        url=url,
        engine="sim",
        tokenizer=WordTokenizer().save_hf(tmp_path / "tok"),
        **fields,  # type: ignore[arg-type]
    )


def test_requests_are_scheduled_at_the_traces_times_and_their_lateness_is_stored(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server(*FAST)
    out = tmp_path / "run.jsonl"
    res = run_bench(_cfg(sim.url, tmp_path, trace_start_s=0.5), out=out)
    [point] = res.points
    assert point.point.label == "replay:mooncake@8.0x"
    want = slice_trace(read_trace(MOONCAKE, "mooncake"), start_s=0.5, limit=16)
    recs = sorted(point.records, key=lambda r: r.index)
    assert len(recs) == 16 and all(r.ok for r in recs)
    assert all(r.scheduled_ns is not None for r in recs)
    t0 = min(r.scheduled_ns or 0 for r in recs)
    for r, w in zip(recs, want):
        assert ((r.scheduled_ns or 0) - t0) / 1e9 == pytest.approx(w.arrival_s / 8, abs=1e-6)
        assert r.usage_prompt_tokens == r.input_tokens == w.input_tokens  # the engine's count
        assert r.usage_completion_tokens == w.output_tokens
        assert r.client_queue_delay_ns is not None and r.client_queue_delay_ns >= 0
    assert point.summary.queue_delay_ms.count == 16  # lateness, send − scheduled, summarised
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    stored = next(x for x in lines if x["type"] == "point")
    assert stored["pattern"]["kind"] == "replay" and stored["pattern"]["trace"] == str(MOONCAKE)
    assert stored["pattern"]["start_s"] == 0.5 and stored["refused_over_context"] == 0
    sent = [x for x in lines if x["type"] == "request"]
    assert all(x["scheduled_ns"] is not None for x in sent)
    meta = lines[0]
    assert meta["workload"]["trace"]["format"] == "mooncake"


@pytest.mark.parametrize(("late_ms", "trust"), [(0.0, "trusted"), (3.0, "untrusted")])
def test_late_sends_decide_trust_on_the_model_clock(
    sim_server: SimFactory, tmp_path: Path, late_ms: float, trust: str
) -> None:
    sim = sim_server(*FAST)
    cfg = _cfg(sim.url, tmp_path, trace_limit=8)
    clock = ModelClock(late_ms={"replay:mooncake@8.0x": late_ms})
    [point] = run_bench(cfg, sinks=[clock.sink(sim.url, cfg)]).points
    assert point.summary.queue_delay_ms.p99 == pytest.approx(late_ms, abs=1e-6)
    assert point.trust.state == trust
    reasons = [i.reason for i in point.trust.issues]
    assert reasons == ([] if trust == "trusted" else ["late-sends"])
    if reasons:
        assert "left late against the trace's schedule: p99 3.00 ms > 1 ms" in (
            point.trust.issues[0].message
        )


def test_a_capped_replay_is_not_judged_on_the_waits_its_cap_makes(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server(*FAST)
    cfg = _cfg(sim.url, tmp_path, trace_limit=8, max_concurrency=1)
    clock = ModelClock(late_ms={"replay:mooncake@8.0x max C=1": 3.0})
    [point] = run_bench(cfg, sinks=[clock.sink(sim.url, cfg)]).points
    assert point.point.label == "replay:mooncake@8.0x max C=1"
    assert point.trust.state == "trusted"


def test_requests_beyond_the_context_are_counted_not_sent(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server(*FAST, "--max-model-len", "1100")
    want = read_trace(MOONCAKE, "mooncake")[:16]
    fits = [r for r in want if r.input_tokens + r.output_tokens <= 1100]
    assert 0 < len(fits) < len(want)
    [point] = run_bench(_cfg(sim.url, tmp_path)).points
    assert point.refused == len(want) - len(fits)
    assert sorted(r.input_tokens or 0 for r in point.records) == sorted(
        r.input_tokens for r in fits
    )
    assert all(r.ok for r in point.records)  # none the engine would refuse was sent
    [warn] = [w for w in point.warnings if w.kind == "over-context"]
    assert f"{point.refused} requests of the trace need more than the model's context" in (
        warn.message
    )
    assert len(sim.truth()) == len(fits)


def test_a_malformed_line_is_named_and_nothing_is_sent(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server(*FAST)
    lines = MOONCAKE.read_text().splitlines()
    lines[29] = lines[29].replace('"output_length"', '"output_len"')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:30: field 'output_length': expected an"):
        run_bench(_cfg(sim.url, tmp_path, trace=bad))
    assert sim.truth() == []


def test_without_a_tokenizer_a_server_whose_words_share_one_id_is_refused(
    sim_server: SimFactory,
) -> None:
    from inferlab.errors import TokenizerError

    sim = sim_server(*FAST)  # its /tokenize maps most English words to [UNK]: one id
    cfg = BenchConfig(url=sim.url, engine="sim", trace=MOONCAKE, trace_limit=4)
    with pytest.raises(
        TokenizerError, match=r"has [0-9]+ words of one token each.*--tokenizer DIR"
    ):
        run_bench(cfg)
    assert sim.truth() == []

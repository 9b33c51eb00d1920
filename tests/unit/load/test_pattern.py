"""LoadPattern: every variant's label, parse and JSON round trips; clear refusals."""

from __future__ import annotations

import json
import math

import pytest

from inferlab.config.bench import BenchConfig
from inferlab.config.pattern import (
    PATTERNS,
    ClosedLoop,
    LoadPattern,
    OpenLoop,
    Replay,
    Sessions,
    closed_concurrency,
    label_key,
)
from inferlab.errors import ConfigError
from inferlab.load.bench import plan_points

#: every built variant, with the label it must write (today's bytes)
CASES: list[tuple[LoadPattern, str]] = [
    (ClosedLoop(1), "C=1"),
    (ClosedLoop(16), "C=16"),
    (OpenLoop(4.0), "rate=4/s"),
    (OpenLoop(0.5), "rate=0.5/s"),
    (OpenLoop(2.0, max_concurrency=8), "rate=2/s max C=8"),
    (OpenLoop(1e6), "rate=1e+06/s"),
    (Replay("mooncake"), "replay:mooncake@1.0x"),
    (Replay("csv", 2.5), "replay:csv@2.5x"),
    (Replay("inferlab", 0.25, max_concurrency=4), "replay:inferlab@0.25x max C=4"),
    (Sessions(4, 8), "sessions:4x8"),
]


def test_every_registered_variant_has_a_case() -> None:
    assert {p.kind for p, _ in CASES} == set(PATTERNS)


@pytest.mark.parametrize(("pattern", "label"), CASES, ids=[lb for _, lb in CASES])
def test_label_parse_and_json_round_trip(pattern: LoadPattern, label: str) -> None:
    assert pattern.label == label
    assert LoadPattern.parse(label) == pattern
    stored = json.loads(json.dumps(pattern.to_json(), allow_nan=False))
    assert stored["kind"] == pattern.kind
    assert LoadPattern.from_json(stored) == pattern


def test_json_keeps_what_the_label_does_not() -> None:
    p = OpenLoop(4.0, arrival="gamma", burstiness=0.5, max_concurrency=3)
    assert p.label == "rate=4/s max C=3"
    assert LoadPattern.from_json(p.to_json()) == p
    assert LoadPattern.parse(p.label) == OpenLoop(4.0, max_concurrency=3)  # default arrival


def test_imported_spellings_read_to_the_same_pattern() -> None:
    assert LoadPattern.parse("C=8,rate=4/s") == OpenLoop(4.0, max_concurrency=8)
    unbounded = LoadPattern.parse("rate=inf")
    assert isinstance(unbounded, OpenLoop) and math.isinf(unbounded.rate)
    stored = json.dumps(unbounded.to_json(), allow_nan=False)  # "inf", not Infinity
    assert LoadPattern.from_json(json.loads(stored)) == unbounded


@pytest.mark.parametrize("label", ["", "C=", "C=0", "C=-1", "C=2.5", "c=8", "rate=4", "rate=x/s",
                                   "rate=0/s", "rate=4/s max", "C=8 ", "16"])  # fmt: skip
def test_parse_refuses_what_no_variant_reads(label: str) -> None:
    with pytest.raises(
        ConfigError, match="not a load point label.*expected C=N, rate=R/s.*replay:FORMAT@Xx"
    ):
        LoadPattern.parse(label)


def test_every_named_variant_is_built() -> None:
    assert {"closed", "open", "replay", "sessions"} <= set(PATTERNS)
    with pytest.raises(ConfigError, match="unknown load pattern kind 'burst'; expected closed"):
        LoadPattern.from_json({"kind": "burst"})
    with pytest.raises(ConfigError, match="load pattern 'sessions': users must be an integer"):
        LoadPattern.from_json({"kind": "sessions", "users": 0, "turns": 8})


def test_a_replay_keeps_its_file_and_slice_in_json_not_in_its_label() -> None:
    p = Replay("mooncake", 2.0, "t.jsonl", 8, limit=100, start_s=5.0, end_s=60.0)
    assert p.label == "replay:mooncake@2.0x max C=8" and p.streams == 8
    assert LoadPattern.from_json(json.loads(json.dumps(p.to_json()))) == p
    assert LoadPattern.parse(p.label) == Replay("mooncake", 2.0, max_concurrency=8)
    for bad, message in [({"speed": 0}, "speed must be"), ({"limit": 0}, "limit must be"),
                         ({"start_s": 5, "end_s": 5}, "window must be")]:  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            LoadPattern.from_json({"kind": "replay", "format": "csv", **bad})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "steps"}, "unknown load pattern kind 'steps'; expected closed, open, replay"),
        ({"kind": "closed", "concurrency": 0}, "'closed': concurrency must be ≥ 1"),
        ({"kind": "closed"}, "'closed': "),
        ({"kind": "closed", "concurrency": 2, "rate": 1}, "'closed': "),
        ({"kind": "open", "rate": -1}, "'open': rate must be > 0"),
        ({"kind": "open", "rate": 1, "arrival": "uniform"}, "'open': arrival must be"),
    ],
)
def test_from_json_refuses_clearly(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LoadPattern.from_json(data)


def test_closed_concurrency_reads_closed_loop_labels_only() -> None:
    assert closed_concurrency("C=16") == 16
    for other in ("rate=4/s", "rate=4/s max C=8", "C=8,rate=4/s", "rate=inf", "x", "", None,
                  "replay:mooncake@1.0x"):  # fmt: skip
        assert closed_concurrency(other) is None


def test_label_key_sorts_closed_then_open_then_replay_then_the_rest() -> None:
    labels = ["zzz", "replay:csv@2.0x", "rate=10/s", "C=16", "replay:csv@0.5x",
              "rate=2/s max C=4", "C=2", "rate=inf"]  # fmt: skip
    assert sorted(labels, key=label_key) == [
        "C=2", "C=16", "rate=2/s max C=4", "rate=10/s", "rate=inf", "replay:csv@0.5x",
        "replay:csv@2.0x", "zzz",
    ]  # fmt: skip


def test_a_sweep_plans_one_point_per_pattern_with_todays_labels() -> None:
    cfg = BenchConfig(url="http://h", concurrency=[1, 8], rate=[4, 0.5], max_concurrency=3,
                      requests=10, arrival="gamma", burstiness=0.5)  # fmt: skip
    assert [p.label for p in cfg.patterns()] == ["C=1", "C=8", "rate=4/s max C=3",
                                                 "rate=0.5/s max C=3"]  # fmt: skip
    pts = plan_points(cfg)
    assert [(p.label, *p.pattern.columns().values()) for p in pts] == [
        ("C=1", 1, None, None),
        ("C=8", 8, None, None),
        ("rate=4/s max C=3", None, 4.0, 3),
        ("rate=0.5/s max C=3", None, 0.5, 3),
    ]
    assert cfg.patterns()[2] == OpenLoop(4.0, "gamma", 0.5, 3)


def test_a_trace_plans_one_replay_point_per_speed_after_the_others(tmp_path: object) -> None:
    cfg = BenchConfig(url="http://h", concurrency=[2], requests=5, trace="t.csv",
                      trace_format="csv", speed=[1, 4], trace_limit=9, trace_end_s=30)  # fmt: skip
    pts = plan_points(cfg)
    assert [p.label for p in pts] == ["C=2", "replay:csv@1.0x", "replay:csv@4.0x"]
    assert pts[1].pattern.columns() == {"concurrency": None, "rate": None, "max_concurrency": None}
    assert pts[2].pattern == Replay("csv", 4.0, "t.csv", None, 9, 0.0, 30.0)
    only = BenchConfig(url="http://h", trace="t.jsonl")  # no --requests: the trace has them
    assert [p.label for p in only.patterns()] == ["replay:mooncake@1.0x"]
    for bad, message in [
        ({"speed": [2.0]}, "need a trace"),
        ({"trace": "t", "speed": [0.0]}, "speed values must be"),
        ({"trace": "t", "trace_start_s": 9, "trace_end_s": 3}, "trace_end_s must be after"),
        ({"trace": "t", "concurrency": [1], "requests": "auto"}, "a trace replays its own"),
        ({"trace": "t", "trace_format": "bailian"}, "trace_format"),
    ]:
        with pytest.raises(ValueError, match=message):
            BenchConfig(url="http://h", **bad)  # type: ignore[arg-type]


def test_trace_formats_of_the_config_are_the_parsers() -> None:
    from typing import get_args

    from inferlab.config.bench import TraceFormat
    from inferlab.load.traces import TRACE_FORMATS

    assert set(get_args(TraceFormat)) == set(TRACE_FORMATS)

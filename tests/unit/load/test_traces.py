"""Trace parsers (``load.traces``): the fixture traces read exactly; every malformed line is
named by file:line with what was expected; slices by window and limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.errors import ConfigError
from inferlab.load.traces import BLOCK_TOKENS, TRACE_FORMATS, read_trace, slice_trace

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
MOONCAKE = TRACES / "mooncake_sample.jsonl"


def test_mooncake_sample_reads_every_line_in_the_published_layout() -> None:
    lines = [json.loads(x) for x in MOONCAKE.read_text().splitlines()]
    reqs = read_trace(MOONCAKE, "mooncake")
    assert len(reqs) == len(lines) == 50
    t0 = lines[0]["timestamp"]
    for r, raw in zip(reqs, lines):
        assert set(raw) == {"timestamp", "input_length", "output_length", "hash_ids"}
        assert r.arrival_s == pytest.approx((raw["timestamp"] - t0) / 1000)
        assert (r.input_tokens, r.output_tokens) == (raw["input_length"], raw["output_length"])
        assert r.hash_ids == tuple(raw["hash_ids"])
        assert len(r.hash_ids) == -(-r.input_tokens // BLOCK_TOKENS)
    assert reqs[0].arrival_s == 0.0 and reqs[0].line == 1


def test_csv_reads_its_columns_in_any_order(tmp_path: Path) -> None:
    reqs = read_trace(TRACES / "plain.csv", "csv")
    assert len(reqs) == 20 and reqs[0].hash_ids is None
    f = tmp_path / "t.csv"
    f.write_text("output_tokens,note,arrival_s,input_tokens\n7,x,2.5,30\n9,y,1.0,40\n")
    got = read_trace(f, "csv")
    assert [(r.arrival_s, r.input_tokens, r.output_tokens, r.line) for r in got] == [
        (0.0, 40, 9, 3),
        (1.5, 30, 7, 2),
    ]


def test_inferlab_export_skips_warmup_and_failed_and_refuses_a_second_run(tmp_path: Path) -> None:
    def row(**kw: object) -> str:
        base = {"format_version": 1, "run_id": 3, "trial": 0, "warmup": False, "send_ns": 0,
                "scheduled_ns": None, "input_tokens": 10, "output_tokens": 5,
                "usage_completion_tokens": 5}  # fmt: skip
        return json.dumps(base | kw)

    f = tmp_path / "export.jsonl"
    f.write_text(
        "\n".join(
            [
                row(warmup=True, send_ns=1),
                row(send_ns=2_000_000_000, scheduled_ns=1_500_000_000),
                row(send_ns=3_000_000_000, output_tokens=None, usage_completion_tokens=None),
                row(send_ns=4_000_000_000, input_tokens=12, usage_completion_tokens=6),
            ]
        )
    )
    got = read_trace(f, "inferlab")
    assert [(r.arrival_s, r.input_tokens, r.output_tokens) for r in got] == [
        (0.0, 10, 5),
        (2.5, 12, 6),
    ]
    f.write_text(row() + "\n" + row(run_id=4) + "\n")
    with pytest.raises(ConfigError, match=r"export\.jsonl:2: a second run .*inferlab export --run"):
        read_trace(f, "inferlab")


BAD_MOONCAKE = [
    ("not json", "invalid JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"input_length": 5, "output_length": 1, "hash_ids": [1]}',
     "field 'timestamp': expected a number ≥ 0, got missing"),
    ('{"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": [1]}',
     "field 'timestamp': expected a number ≥ 0, got -1"),
    ('{"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []}',
     "field 'input_length': expected an integer ≥ 1, got 0"),
    ('{"timestamp": 0, "input_length": 5, "output_length": "8", "hash_ids": [1]}',
     "field 'output_length': expected an integer ≥ 1, got '8'"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": ["a"]}',
     "field 'hash_ids': expected a list of integers"),
    ('{"timestamp": 0, "input_length": 513, "output_length": 1, "hash_ids": [1]}',
     "field 'hash_ids': expected 2 ids .*input_length 513.*got 1"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "message"), BAD_MOONCAKE)
def test_a_malformed_mooncake_line_is_named_by_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    f = tmp_path / "trace.jsonl"
    good = MOONCAKE.read_text().splitlines()[:3]
    f.write_text("\n".join([*good, "", line, *good]) + "\n")  # blank line 4 is skipped
    with pytest.raises(ConfigError, match=rf"trace\.jsonl:5: {message}"):
        read_trace(f, "mooncake")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("arrival,input_tokens,output_tokens\n", r"t\.csv:1: header: expected columns .*missing "
                                                  "arrival_s"),
        ("arrival_s,input_tokens,output_tokens\n0,1\n", r"t\.csv:2: expected 3 columns, got 2"),
        ("arrival_s,input_tokens,output_tokens\n0,1,2\nsoon,1,2\n",
         r"t\.csv:3: column 'arrival_s': expected a number, got 'soon'"),
        ("arrival_s,input_tokens,output_tokens\n0,1.5,2\n",
         r"t\.csv:2: column 'input_tokens': expected an integer, got '1.5'"),
        ("arrival_s,input_tokens,output_tokens\n0,1,0\n",
         r"t\.csv:2: field 'output_tokens': expected an integer ≥ 1, got 0"),
        ("", r"t\.csv: empty trace"),
    ],
)  # fmt: skip
def test_a_malformed_csv_line_is_named(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "t.csv"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_trace(f, "csv")


def test_unknown_format_and_missing_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="trace format 'bailian': unknown; expected mooncake"):
        read_trace(MOONCAKE, "bailian")
    with pytest.raises(ConfigError, match="cannot read the trace"):
        read_trace(tmp_path / "absent.jsonl", "mooncake")
    assert set(TRACE_FORMATS) == {"mooncake", "csv", "inferlab"}


def test_slices_by_window_then_limit_rebased_to_the_first_kept() -> None:
    reqs = read_trace(MOONCAKE, "mooncake")
    win = slice_trace(reqs, start_s=1.0, end_s=3.0)
    inside = [r for r in reqs if 1.0 <= r.arrival_s < 3.0]
    assert len(win) == len(inside) > 3
    assert win[0].arrival_s == 0.0
    assert win[-1].arrival_s == pytest.approx(inside[-1].arrival_s - inside[0].arrival_s)
    assert [r.line for r in slice_trace(reqs, start_s=1.0, end_s=3.0, limit=3)] == [
        r.line for r in inside[:3]
    ]
    assert len(slice_trace(reqs, limit=7)) == 7
    with pytest.raises(ConfigError, match=r"no request in the window 900:1000 s"):
        slice_trace(reqs, start_s=900, end_s=1000)

"""Lever-applied evidence (``engines.evidence``): the args dumps of real logs parse, and how
values compare."""

from __future__ import annotations

from typing import Any

import pytest

from inferlab.engines.evidence import (
    SGLANG_SERVER_ARGS,
    VLLM_NON_DEFAULT,
    parse_call_kwargs,
    parse_dict_literal,
    same_value,
)
from support import FIXTURES

FIX = FIXTURES
VLLM = FIX / "vllm_cpu"
LEV = FIX / "levers"
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4,"prompt_lookup_min":2}'


# ------------------------------------------------------------------------- args dumps


def test_args_dumps_of_real_logs_parse() -> None:
    line = next(
        ln
        for ln in (VLLM / "spec_decode_ngram.log").read_text().splitlines()
        if "non-default args" in ln
    )
    got = VLLM_NON_DEFAULT.find(line)
    assert got is not None and got["speculative_config"]["num_speculative_tokens"] == 3
    assert got["served_model_name"] == ["tiny"] and got["enforce_eager"] is True
    sg = next(
        ln
        for ln in (LEV / "sglang-glm5-fp8-rocm-tp8_server-args.log").read_text().splitlines()
        if "server_args=" in ln
    )
    args = SGLANG_SERVER_ARGS.find(sg)
    assert args is not None and args["cuda_graph_bs"][:3] == [1, 2, 4]
    assert args["speculative_algorithm"] is None and args["kv_cache_dtype"] == "fp8_e4m3"
    assert SGLANG_SERVER_ARGS.find("no dump here") is None
    # a value that is not a literal (an enum's repr) keeps its source text
    assert parse_call_kwargs("X(a=1, mode=<Mode.A: 1>)") is None  # not Python: no guess
    assert parse_call_kwargs("X(a=1, mode=Mode.A)") == {"a": 1, "mode": "Mode.A"}
    assert parse_call_kwargs("X(a=Y(b=2), c=f(3))") == {"a": {"b": 2}, "c": "f(3)"}


def test_profiled_launch_args_dump_parses() -> None:
    """vLLM 0.32 prints ``--profiler-config`` as a dataclass repr inside the non-default args
    dict (a real ``demo --optimize`` profiled launch): the other fields still read, so the
    profiled launch keeps its lever evidence."""
    line = next(
        ln
        for ln in (VLLM / "profiled_launch.log").read_text().splitlines()
        if "non-default args" in ln
    )
    got = VLLM_NON_DEFAULT.find(line)
    assert got is not None
    assert got["max_num_seqs"] == 4 and got["max_num_batched_tokens"] == 2048
    assert got["enable_chunked_prefill"] is False
    assert got["speculative_config"]["num_speculative_tokens"] == 2
    assert got["profiler_config"]["profiler"] == "torch"
    assert got["profiler_config"]["max_iterations"] == 21
    assert parse_dict_literal("{'a': X(b=1, c=Y.Z), 'd': [f(1)]}") == {
        "a": {"b": 1, "c": "Y.Z"},
        "d": ["f(1)"],
    }
    assert parse_dict_literal("{'a': 1") is None  # not Python: no guess
    assert parse_dict_literal("[1, 2]") is None


@pytest.mark.parametrize(
    ("values", "got", "same"),
    [
        (("0.60",), 0.6, True),
        (("0.70",), 0.908, False),
        ((), True, True),  # a bare boolean flag
        ((), False, False),
        (("tiny",), ["tiny"], True),
        (("1", "2", "4"), [1, 2, 4], True),
        (
            (NGRAM,),
            {
                "method": "ngram",
                "num_speculative_tokens": 3,
                "prompt_lookup_max": 4,
                "prompt_lookup_min": 2,
                "model": None,
            },
            True,
        ),
        (
            ('{"method":"ngram","num_speculative_tokens":5}',),
            {"method": "ngram", "num_speculative_tokens": 3},
            False,
        ),
        (("EAGLE",), "EAGLE", True),
        (("true",), True, True),
    ],
)
def test_same_value(values: tuple[str, ...], got: Any, same: bool) -> None:
    assert same_value(values, got) is same

"""Engine flags (``engines.flags``): what a flag is, parse forms and aliases, ``set``/``unset``
applied, diffs alias- and number-aware."""

from __future__ import annotations

import pytest

from inferlab.engines import (
    Change,
    get_engine,
)
from inferlab.engines.flags import FlagSyntax, apply, diff, is_flag, parse
from inferlab.errors import ConfigError

# ---------------------------------------------------------------- flags


def test_is_flag() -> None:
    assert is_flag("--tp") and is_flag("-tp") and is_flag("-m")
    assert not is_flag("-1") and not is_flag("-0.5") and not is_flag("0.7") and not is_flag("-")


def test_parse_forms_and_aliases() -> None:
    vllm = get_engine("vllm")
    p = vllm.parse_args(
        [
            *("-tp", "2", "--max_model_len=4096", "--enforce-eager", "--seed", "-1"),
            *("--max-model-len", "8192", "--cuda-graph-sizes", "1", "2", "4"),
            '--override-generation-config={"a": 1}',
        ]
    )
    assert dict(p.flags) == {
        "--tensor-parallel-size": ("2",),
        "--max-model-len": ("8192",),  # given twice: first position, last value (argparse)
        "--enforce-eager": (),
        "--seed": ("-1",),
        "--cuda-graph-sizes": ("1", "2", "4"),
        "--override-generation-config": ('{"a": 1}',),
    }
    assert list(p.flags)[1] == "--max-model-len"
    sg = get_engine("sglang")
    for spelling in ("--tp", "--tp-size", "--tensor-parallel-size"):
        assert sg.parse_args([spelling, "4"]).get("--tp-size") == ("4",)
    # SGLang's argparse does not fold underscores: neither do we
    assert "--mem_fraction_static" in sg.parse_args(["--mem_fraction_static", "0.6"])
    lc = get_engine("llamacpp")
    assert dict(lc.parse_args(["-c", "4096", "-ngl", "99", "-fa", "on"]).flags) == {
        "--ctx-size": ("4096",),
        "--n-gpu-layers": ("99",),
        "--flash-attn": ("on",),
    }
    # repeatable flags accumulate
    assert lc.parse_args(["--lora", "a", "--lora", "b"]).get("--lora") == ("a", "b")
    assert lc.apply(["--lora", "a", "--lora", "b"]) == ["--lora", "a", "--lora", "b"]
    # tokens before the first flag are kept as positionals
    assert parse(["serve", "--x", "1"]).positionals == ("serve",)


def test_apply_set_and_unset_the_design_example() -> None:
    sg = get_engine("sglang")
    base = ["--tp", "4", "--mem-fraction-static", "0.70", "--enable-torch-compile"]
    mtp = [*base, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "1"]
    out = sg.apply(
        mtp,
        set={"--mem-fraction-static": 0.60, "--cuda-graph-max-bs": 16},
        unset=["--enable-torch-compile"],
    )
    assert out == [
        "--tp-size",
        "4",
        "--mem-fraction-static",
        "0.6",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "1",
        "--cuda-graph-max-bs",
        "16",
    ]
    assert [str(c) for c in sg.diff(base, out)] == [
        "~ --mem-fraction-static: 0.70 → 0.6",
        "- --enable-torch-compile",
        "+ --speculative-algorithm EAGLE",
        "+ --speculative-num-steps 1",
        "+ --cuda-graph-max-bs 16",
    ]


def test_apply_value_kinds_and_errors() -> None:
    syn = FlagSyntax()
    assert apply(["--a", "1"], syn, set={"--b": True}) == ["--a", "1", "--b"]
    assert apply(["--a", "1", "--b"], syn, set={"--b": False}) == ["--a", "1"]
    assert apply([], syn, set={"--cuda-graph-bs": [1, 2, 4]}) == ["--cuda-graph-bs", "1", "2", "4"]
    assert apply([], syn, set={"--x": "--y"}) == ["--x=--y"]  # round-trips through parse
    assert parse(["--x=--y"]).get("--x") == ("--y",)
    with pytest.raises(ConfigError, match=r"unset --nope: not in the args \(flags there: --a\)"):
        apply(["--a", "1"], syn, unset=["--nope"])
    assert apply(["--a", "1"], syn, unset=["--nope"], missing_ok=True) == ["--a", "1"]
    with pytest.raises(ConfigError, match="is not a flag"):
        apply([], syn, set={"mem": 1})
    # unset sees aliases
    assert get_engine("vllm").apply(
        ["-tp", "2", "-q", "fp8"], unset=["--tensor_parallel_size"]
    ) == [
        "--quantization",
        "fp8",
    ]


def test_diff_is_alias_and_number_aware_and_ordered() -> None:
    vllm = get_engine("vllm")
    a = ["-tp", "2", "--gpu-memory-utilization", "0.90", "--enforce-eager"]
    b = ["--max-num-seqs", "64", "--tensor-parallel-size", "2", "--gpu_memory_utilization", "0.9"]
    assert vllm.diff(a, b) == [
        Change("--enforce-eager", "removed", (), None),
        Change("--max-num-seqs", "added", None, ("64",)),
    ]
    assert vllm.diff(a, a) == []
    assert diff(["--x", "1"], ["--x", "2"]) == [Change("--x", "changed", ("1",), ("2",))]
    assert str(Change("--e", "added", None, ())) == "+ --e (on)"

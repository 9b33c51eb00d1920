"""Flag families from real argparse ``--help`` output (``recon.flags``)."""

from __future__ import annotations

import argparse

from inferlab.recon.flags import classify, parse_help

# -- --help parsing --------------------------------------------------------------------------


def _sglang_like_help() -> str:
    """Real argparse output for flags SGLang's launch_server has (names and choices)."""
    ap = argparse.ArgumentParser(prog="launch_server.py")
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--quantization", choices=["fp8", "w8a8_fp8", "awq", "gptq"])
    ap.add_argument("--kv-cache-dtype", choices=["auto", "fp8_e5m2", "fp8_e4m3"])
    ap.add_argument("--speculative-algorithm", choices=["EAGLE", "EAGLE3", "NEXTN", "NGRAM"])
    ap.add_argument("--speculative-draft-model-path")
    ap.add_argument("--speculative-num-steps", type=int)
    ap.add_argument("--cuda-graph-max-bs", type=int)
    ap.add_argument("--cuda-graph-bs", type=int, nargs="+")
    ap.add_argument("--disable-cuda-graph", action="store_true")
    ap.add_argument("--enable-torch-compile", action="store_true")
    ap.add_argument(
        "--enable-mixed-chunk",
        action="store_true",
        help="unlike --made-up-flag, see --cuda-graph-max-bs",
    )
    ap.add_argument("--enable-eager-mode", action=argparse.BooleanOptionalAction, help="eager mode")
    ap.add_argument("--mem-fraction-static", type=float)
    return ap.format_help()


def test_help_families_from_real_argparse_output() -> None:
    flags = parse_help(_sglang_like_help())
    names = [f.name for f in flags]
    assert names.count("--cuda-graph-max-bs") == 1  # usage, options and a description mention
    assert "--help" in names and "--no-enable-eager-mode" not in names
    assert "--made-up-flag" not in names  # mentioned in a description, not offered
    eager = next(f for f in flags if f.name == "--enable-eager-mode")
    assert eager.negatable
    fam = {k: [f.name for f in v] for k, v in classify(flags).items()}
    assert fam["speculative"] == [
        "--speculative-algorithm",
        "--speculative-draft-model-path",
        "--speculative-num-steps",
    ]
    assert fam["fp8"] == ["--quantization", "--kv-cache-dtype"]
    assert fam["cuda_graph"] == [
        "--cuda-graph-max-bs",
        "--cuda-graph-bs",
        "--disable-cuda-graph",
        "--enable-torch-compile",
    ]
    kv = next(f for f in flags if f.name == "--kv-cache-dtype")
    assert kv.choices == ("auto", "fp8_e5m2", "fp8_e4m3")

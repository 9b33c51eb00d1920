"""SGLang 0.5.17's own log lines from its first run under inferlab (an H100 80GB, 2026-12-07,
tests/fixtures/engine_logs/sglang_h100/): the untuned and tuned FP8 GEMM shapes it names, and
its stop, which must not read as a crash."""

from __future__ import annotations

from pathlib import Path

from inferlab.campaign.parts.aftermath import runtime_failure
from inferlab.engines import get_engine
from inferlab.engines.evidence import SGLANG_SERVER_ARGS
from inferlab.engines.logs import primary_failure
from inferlab.logs import analyze_log

ROOT = Path(__file__).resolve().parents[3]
LOGS = ROOT / "tests/fixtures/engine_logs/sglang_h100"
BASELINE = LOGS / "baseline-0.5.17-h100.log"
TUNED = LOGS / "A-tuned-0.5.17-h100-excerpt.log"
SHAPES = {(3072, 2048), (2048, 2048), (16384, 2048), (2048, 8192)}


def test_the_baseline_log_names_its_four_untuned_shapes_in_the_0_5_17_directory() -> None:
    an = analyze_log(BASELINE)
    assert an.engine == "sglang"
    got = {(g.n, g.k) for g in an.untuned_gemms}
    assert got == SHAPES
    assert {g.device for g in an.untuned_gemms} == {"NVIDIA_H100_80GB_HBM3"}
    kinds = [f.kind for f in an.findings]
    assert "untuned-fp8-gemm" in kinds
    msg = next(f.message for f in an.findings if f.kind == "untuned-fp8-gemm")
    assert "sglang/kernels/ops/quantization/configs" in msg and "0.5.16" in msg


def test_the_tuned_launch_log_says_each_shape_was_read_from_a_file() -> None:
    an = analyze_log(TUNED)
    assert an.untuned_gemms == []
    assert len(an.tuned) == 4


def test_a_stop_is_not_a_crash_but_a_crash_before_it_still_is(tmp_path: Path) -> None:
    sglang = get_engine("sglang")
    lines = BASELINE.read_text().split("\n")
    stop = next(i for i, ln in enumerate(lines) if "SIGTERM received" in ln)
    assert "crashed with exit code -15" in lines[stop + 1]  # what the scheduler logs as it obeys
    assert runtime_failure(sglang, BASELINE) is None
    assert "launch-failure" not in [f.kind for f in analyze_log(BASELINE).findings]
    # constructed: the same crash line before any stop request is a fault of the server
    crashed = tmp_path / "crashed.log"
    crashed.write_text("\n".join([*lines[:stop], lines[stop + 1], *lines[stop:]]))
    hit = runtime_failure(sglang, crashed)
    assert hit is not None and hit.kind == "child_failed" and hit.line_no == stop + 1
    # a pipeline that knows when it asked for the stop cuts there, whatever the engine logs
    assert runtime_failure(sglang, crashed, until_line=stop) is None


OOM = LOGS / "graph-oom-0.998-0.5.17-h100.log"
FIX = LOGS / "graph-oom-fix-0.89-0.5.17-h100-excerpt.log"


def test_a_static_pool_of_the_whole_gpu_is_classified_with_its_remedy_not_as_an_exception() -> None:
    # 0.5.17 at --mem-fraction-static 0.998 (2026-12-07, part 2 of the campaign): the pool left
    # 0.04 GB and cuBLAS failed to create its handle, before any CUDA-graph capture
    sglang = get_engine("sglang")
    lines = OOM.read_text().splitlines()
    assert any("Memory pool end. avail mem=0.04 GB" in ln for ln in lines)
    hit = primary_failure(sglang.classify_log(lines))
    assert hit is not None and hit.kind == "cublas_alloc_failed"
    assert "--mem-fraction-static" in hit.flags and "lower --mem-fraction-static" in hit.remedy
    kinds = [m.kind for m in sglang.classify_log(lines) if m.fatal]
    assert "scheduler_exception" in kinds  # still seen, but as the consequence
    an = analyze_log(OOM)  # `inferlab logs analyze` on the same log
    assert an.engine == "sglang"
    (failed,) = [f for f in an.findings if f.kind == "launch-failure"]
    assert "cublas alloc failed" in failed.message and "line 40" in failed.message


def test_the_old_graph_flag_is_checked_under_its_0_5_17_field() -> None:
    # --cuda-graph-max-bs is a deprecated alias in 0.5.16+: its dest is cuda_graph_max_bs_decode
    sglang = get_engine("sglang")
    assert sglang.evidence.field_names("--cuda-graph-max-bs") == (
        "cuda_graph_max_bs",
        "cuda_graph_max_bs_decode",
    )
    dump = next(
        d
        for ln in FIX.read_text().splitlines()
        for d in [SGLANG_SERVER_ARGS.find(ln)]
        if d is not None
    )
    assert "cuda_graph_max_bs" not in dump and dump["cuda_graph_max_bs_decode"] == 1024


def test_ngram_accept_length_is_a_share_of_its_draft_tokens() -> None:
    # NGRAM drafts no steps (speculative_num_steps=0 in 0.5.17's server_args): the possible is
    # --speculative-num-draft-tokens 4, where "of a possible 1 (155%)" was read before
    an = analyze_log(LOGS / "ngram-launch2-0.5.17-h100-excerpt.log")
    (spec,) = [f for f in an.findings if f.kind == "spec-accept"]
    assert spec.evidence["possible"] == 4
    assert "--speculative-num-draft-tokens 4" in spec.evidence["possible_from"]
    assert 0.25 < spec.evidence["share_of_possible"] < 0.5 and spec.severity == "warning"

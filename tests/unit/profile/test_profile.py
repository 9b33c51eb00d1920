"""``inferlab.profile`` on two real H200 Kineto traces (facts from the recording session, in
tests/fixtures/traces/README.md), categories, diffs and broken inputs."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from inferlab.errors import ConfigError, TraceError
from inferlab.profile import Categorizer, analyze, diff_profiles, load_rules, read_trace
from inferlab.profile.steps import make_step
from support import FIXTURES
from support.nsys import nsys_db

TRACES = FIXTURES / "traces"
MOE = TRACES / "moe_decode_trace.json.gz"
GRAPH = TRACES / "cudagraph_decode_trace.json.gz"


def _by_name(p: Any, needle: str) -> Any:
    rows = [r for r in p.kernel_rows if needle in r.name]
    assert rows, needle
    return max(rows, key=lambda r: r.time_us)


@pytest.fixture(scope="module")
def moe() -> Any:
    return read_trace(MOE)


@pytest.fixture(scope="module")
def graph() -> Any:
    return read_trace(GRAPH)


# ------------------------------------------------------------------ facts of the real traces


def test_moe_decode_steps_match_the_recorded_facts(moe: Any) -> None:
    p = analyze(moe, segment="decode")
    assert p.n_steps == 16 and p.step_source.startswith("GPU annotations")
    assert all(s.kernels == 575 for s in p.steps)
    m = p.mean_step()
    assert m is not None
    assert m["span_us"] == pytest.approx(20272, abs=5)
    assert m["busy_us"] == pytest.approx(4669, abs=5)
    assert p.verdict.startswith("kernels busy 4.67 of 20.3 ms per decode step (23%): launch-bound")
    assert "CUDA graphs would help" in p.verdict
    assert p.sm_count == 132 and p.device == "NVIDIA H200"
    assert p.graph_launches == 0


def test_moe_whole_trace_kernel_time_by_name(moe: Any) -> None:
    p = analyze(moe, segment="all")
    assert p.kernels == 10287 and p.kernel_names == 78
    assert p.kernel_us == pytest.approx(86333.0, abs=0.5)
    assert p.kernel_rows[0].name.startswith("void at::native::vectorized_gather_kernel")
    assert p.kernel_rows[0].share == pytest.approx(0.397, abs=0.0005)
    assert _by_name(p, "nvjet_sm90_tst_384x8").share == pytest.approx(0.152, abs=0.0005)
    assert _by_name(p, "nvjet_sm90_tst_512x8").share == pytest.approx(0.083, abs=0.0005)
    # every kernel is attributed: the category times add up to the kernel time
    kernel_cats = [r for r in p.categories if r.share is not None]
    assert sum(r.time_us for r in kernel_cats) == pytest.approx(p.kernel_us, rel=1e-9)
    assert sum(r.count for r in kernel_cats) == 10287
    assert p.copies == 150  # 62 memcpy + 88 memset, reported beside kernel time


def test_cudagraph_decode_matches_the_recorded_facts(graph: Any) -> None:
    p = analyze(graph, segment="decode")
    assert p.n_steps == 16 and all(s.kernels == 813 for s in p.steps)
    m = p.mean_step()
    assert m is not None
    assert m["span_us"] == pytest.approx(4027, abs=1)
    assert m["min_span_us"] == pytest.approx(4016, abs=1)
    assert m["max_span_us"] == pytest.approx(4034, abs=1)
    assert m["busy_us"] == pytest.approx(3658, abs=1)
    assert "(91%): GPU-bound" in p.verdict
    copy = _by_name(p, "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}")
    assert copy.name.startswith("void at::native::elementwise_kernel<128, 4")
    assert copy.share == pytest.approx(0.354, abs=0.0005)
    assert _by_name(p, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT").share == pytest.approx(
        0.125, abs=0.0005
    )
    assert _by_name(p, "cudnn_generated_fort_native_sdpa").share == pytest.approx(0.107, abs=0.0005)
    mul = _by_name(
        p,
        "elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16",
    )
    assert mul.share == pytest.approx(0.064, abs=0.0005)
    # all 812 graph kernels of each step share their cudaGraphLaunch's correlation
    assert p.graph_launches == 16 and p.graph_kernels == 16 * 812
    assert p.copies == 16  # one 64 B device-to-device copy per step


def test_cudagraph_prefill_span(graph: Any) -> None:
    p = analyze(graph, segment="prefill")
    assert p.n_steps == 1 and p.steps[0].span_us == pytest.approx(34581, abs=1)


def test_amdahl_bounds_use_the_share_of_step_time(graph: Any) -> None:
    p = analyze(graph, segment="decode")
    top = p.kernel_rows[0]
    f = top.time_us / p.span_us
    assert top.amdahl_free == pytest.approx(1 / (1 - f))
    assert top.amdahl_2x == pytest.approx(1 / (1 - f / 2))
    assert 1.4 < top.amdahl_free < 1.5  # direct_copy: 32% of the step's span


def test_occupancy_counts_grids_smaller_than_the_gpu(graph: Any) -> None:
    p = analyze(graph, segment="decode")
    assert p.occupancy and all(0 < o.blocks < 132 for o in p.occupancy)
    assert p.occupancy_share == pytest.approx(sum(o.share for o in p.occupancy), rel=1e-9)
    sdpa = next(o for o in p.occupancy if "sdpa" in o.name)
    assert sdpa.blocks == 128 and sdpa.sm_fraction == pytest.approx(128 / 132)
    # --sms overrides the trace: on a 64-SM GPU the 128-block grid fills every SM
    small = analyze(graph, segment="decode", sms=64)
    assert not any("sdpa" in o.name for o in small.occupancy)


def test_steps_pattern_selects_ranges(graph: Any) -> None:
    p = analyze(graph, segment="decode", steps_pattern=r"decode_step_(1|2)$")
    assert [s.name for s in p.steps] == ["decode_step_1", "decode_step_2"]
    with pytest.raises(ConfigError, match=r"no range of .* matches; its ranges are: decode_step_0"):
        analyze(graph, segment="decode", steps_pattern="verify_step")


def test_diff_attributes_by_name(moe: Any, graph: Any) -> None:
    a, b = analyze(moe, segment="decode"), analyze(graph, segment="decode")
    d = diff_profiles(a, b)
    assert d.unit == "per step"
    by = {r.name: r for r in d.categories}
    ew = by["elementwise/copy"]
    a_ew = next(r for r in a.categories if r.name == "elementwise/copy")
    assert ew.a_us == pytest.approx(a_ew.time_us / 16)
    assert ew.delta_us == pytest.approx(ew.b_us - ew.a_us)
    gather = next(r for r in d.kernels if "vectorized_gather_kernel" in r.name)
    assert gather.b_us == 0.0 and gather.ratio == 0.0  # only in A's decode
    assert d.span_a_us == pytest.approx(20272, abs=5) and d.span_b_us == pytest.approx(4027, abs=1)


def test_user_categories_file_extends_the_registry(tmp_path: Path, moe: Any) -> None:
    f = tmp_path / "cats.toml"
    f.write_text('[[rule]]\ncategory = "moe"\npattern = "vectorized_gather_kernel"\n')
    p = analyze(moe, segment="decode", categorizer=Categorizer(load_rules(f)))
    moe_row = next(r for r in p.categories if r.name == "moe")
    assert moe_row.share == pytest.approx(0.452, abs=0.0005)
    j = tmp_path / "cats.json"
    j.write_text(json.dumps({"rules": [{"category": "my_kernels", "pattern": "nvjet"}]}))
    p = analyze(moe, segment="decode", categorizer=Categorizer(load_rules(j)))
    assert p.categories[1].name == "my_kernels"


def test_bad_categories_files_name_file_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('[[rule]]\ncategory = "moe"\npatern = "x"\n')
    with pytest.raises(ConfigError, match=r"bad\.toml: field rule\.0\.pattern"):
        load_rules(f)
    f.write_text('[[rule]]\ncategory = "moe"\npattern = "(unclosed"\n')
    with pytest.raises(ConfigError, match=r"rule 1 \(moe\): bad regular expression"):
        load_rules(f)


def test_unknown_kernels_are_listed_never_dropped(tmp_path: Path) -> None:
    db = nsys_db(tmp_path / "n.sqlite")
    p = analyze(read_trace(db), segment="decode")
    assert p.unknown == ["my_custom_op_kernel(float*, int)"]
    other = next(r for r in p.categories if r.name == "other")
    assert other.time_us == pytest.approx(3 * 10.0)


def _moe_text() -> str:
    return gzip.decompress(MOE.read_bytes()).decode()


def test_truncated_gzip_is_named(tmp_path: Path) -> None:
    raw = MOE.read_bytes()
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(
        TraceError,
        match=r"cut\.json\.gz: truncated gzip: the compressed stream ends after [\d,]+ uncompressed bytes",
    ):
        read_trace(bad)


def test_truncated_plain_json_is_located(tmp_path: Path) -> None:
    text = _moe_text()
    bad = tmp_path / "cut.json"
    bad.write_text(text[: len(text) // 3])
    with pytest.raises(TraceError, match=r"cut\.json: invalid JSON at byte [\d,]+ .*truncated"):
        read_trace(bad)


def test_invalid_json_names_file_and_byte_offset(tmp_path: Path) -> None:
    text = _moe_text()
    needle = '"dur": 2.304,'
    at = text.index('"cat": "kernel"')
    at = text.index(needle, at)
    broken = text[:at] + '"dur": 2.304,,' + text[at + len(needle) :]
    bad = tmp_path / "broken.json"
    bad.write_text(broken)
    with pytest.raises(TraceError) as e:
        read_trace(bad)
    msg = str(e.value)
    m = re.search(r"broken\.json: invalid JSON at byte ([\d,]+) \(line (\d+), column (\d+)\)", msg)
    assert m, msg
    offset = int(m.group(1).replace(",", ""))
    assert offset == len(broken[: at + len(needle)].encode())  # the second comma
    assert int(m.group(2)) == broken[:offset].count("\n") + 1


def test_trace_without_gpu_or_cpu_ops_is_refused(tmp_path: Path) -> None:
    d = json.loads(_moe_text())
    gone = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cpu_op"}
    d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") not in gone]
    f = tmp_path / "cpu.json"
    f.write_text(json.dumps(d))
    with pytest.raises(TraceError, match=r"cpu\.json: no GPU activity .* no CPU operators"):
        analyze(read_trace(f), segment="decode")


def test_absurd_durations_are_excluded_with_a_warning(tmp_path: Path) -> None:
    d = json.loads(_moe_text())
    ks = [e for e in d["traceEvents"] if e.get("cat") == "kernel"]
    lost = ks[0]["dur"] + ks[1]["dur"]
    ks[0]["dur"], ks[1]["dur"] = 1.8e13, -4.0  # CUPTI overflow, negative
    f = tmp_path / "overflow.json"
    f.write_text(json.dumps(d))
    p = analyze(read_trace(f), segment="all")
    assert p.kernels == 10287 - 2
    assert any(w.startswith("2 GPU op(s) with a negative or absurd duration") for w in p.warnings)
    assert p.kernel_us == pytest.approx(86333.035 - lost, abs=1e-3)
    decode = analyze(read_trace(f), segment="decode")
    assert decode.n_steps == 16  # partial results: the rest is sound


def test_idle_gap_steps_when_nothing_is_annotated(tmp_path: Path) -> None:
    d = json.loads(_moe_text())
    d["traceEvents"] = [e for e in d["traceEvents"] if "annotation" not in str(e.get("cat"))]
    f = tmp_path / "plain.json"
    f.write_text(json.dumps(d))
    p = analyze(read_trace(f), segment="decode")
    assert p.step_source == "idle gaps" and len(p.steps) > 1
    assert sum(s.kernels for s in p.steps) == 10287
    assert any("cannot be told apart" in w for w in p.warnings)


def test_fp8_gemm_share_bounds_and_predicts_what_tuning_bought() -> None:
    """Two real H200 decode traces that differ only in the FP8 block-GEMM configs (inferlab's
    tuned vs SGLang's default; benchmarks/record_fp8_decode_trace.py): the FP8 GEMM share and its
    Amdahl bound, and the diff's prediction of the step speed-up that was measured unprofiled
    (1.2783 → 1.0847 ms per step, ×0.849; benchmarks/fp8_decode_traces_h200.json)."""
    a = analyze(read_trace(TRACES / "fp8_decode_default.json.gz"))
    b = analyze(read_trace(TRACES / "fp8_decode_tuned.json.gz"))
    assert a.n_steps == b.n_steps == 16 and a.graph_launches == 16
    fa = next(c for c in a.to_dict()["categories"] if c["name"] == "fp8_gemm")
    fb = next(c for c in b.to_dict()["categories"] if c["name"] == "fp8_gemm")
    assert fa["count"] == fb["count"] == 512  # 4 GEMMs × 8 layers × 16 steps
    assert fa["share"] == pytest.approx(0.4408, abs=5e-4)
    assert fa["amdahl_free"] == pytest.approx(1.642, abs=2e-3)
    assert fb["per_step_us"] / fa["per_step_us"] == pytest.approx(0.615, abs=5e-3)
    d = diff_profiles(a, b).to_dict()
    sa, sb = d["span_a_us"], d["span_b_us"]
    predicted = (sa + sum(r["delta_us"] for r in d["categories"])) / sa
    assert sa == pytest.approx(1325.8, abs=0.5) and sb == pytest.approx(1131.7, abs=0.5)
    assert predicted == pytest.approx(0.851, abs=2e-3)
    # the prediction from kernel time alone is within 1% of the unprofiled measurement
    assert predicted == pytest.approx(1.0847 / 1.2783, rel=0.01)
    # and the tuned step stays inside the bound the default trace set for FP8 GEMM
    assert sa / sb < fa["amdahl_free"]


def test_make_step_clips_idle_at_zero_and_reads_the_batch_from_the_name() -> None:
    s = make_step("step[DECODE bs=16]", 100.0, 350.0, 200.0, 12, 230.0)
    assert (s.span_us, s.idle_us, s.batch, s.kernels) == (250.0, 50.0, 16, 12)
    over = make_step("execute_context_0(0)_generation_4(4)", 0.0, 10.0, 12.0, 3, 12.0)
    assert (over.idle_us, over.batch) == (0.0, 4)
    assert make_step("no batch here", 0.0, 1.0, 0.5, 1, 0.5).batch is None

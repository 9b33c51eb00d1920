"""``inferlab profile`` on two real H200 Kineto traces (facts from the recording session, in
tests/fixtures/traces/README.md), an Nsight-style SQLite export built here, and broken inputs."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from inferlab.errors import ConfigError, TraceError
from inferlab.profile import Categorizer, analyze, diff_profiles, load_rules, read_trace
from inferlab.profile.kineto import _general
from inferlab.profile.trace import TraceBuilder
from inferlab.report.render import build_report, render_html, render_markdown
from inferlab.store import Store
from support import FIXTURES
from support.cli import Cli

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
    db = _nsys_db(tmp_path / "n.sqlite")
    p = analyze(read_trace(db), segment="decode")
    assert p.unknown == ["my_custom_op_kernel(float*, int)"]
    other = next(r for r in p.categories if r.name == "other")
    assert other.time_us == pytest.approx(3 * 10.0)


# ------------------------------------------------------------------------- reader paths


def test_fast_and_general_parsers_agree(moe: Any, tmp_path: Path) -> None:
    b = TraceBuilder(str(MOE), "kineto")
    _general(MOE, b)
    slow = b.build()
    assert (slow.start == moe.start).all() and (slow.dur == moe.dur).all()
    assert slow.names == moe.names and slow.ranges == moe.ranges
    assert (slow.launch_corr == moe.launch_corr).all() and slow.sm_count == moe.sm_count
    # a re-serialized trace (no Kineto layout, deviceProperties after the events) gives the
    # same analysis through the general parser
    d = json.loads(gzip.decompress(MOE.read_bytes()))
    props = d.pop("deviceProperties")
    d["deviceProperties"] = props
    other = tmp_path / "compact.json"
    other.write_text(json.dumps(d, separators=(",", ":")))
    p1, p2 = analyze(moe, segment="all"), analyze(read_trace(other), segment="all")
    assert p2.kernels == p1.kernels and p2.kernel_us == pytest.approx(p1.kernel_us)
    assert p2.sm_count == 132 and p2.occupancy_share == pytest.approx(p1.occupancy_share)


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


# ----------------------------------------------------------------------------- nsys export

# columns as `nsys export --type sqlite` (2024.6, schema 3.16) writes them
_KERNEL = """CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
 deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
 streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
 demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
 launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
 gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
 blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
 dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
 localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
 graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER)"""
_RUNTIME = """CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
 eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
 returnValue INTEGER NOT NULL, callchainId INTEGER)"""
_NVTX = """CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
 rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
 endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
 doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER,
 jsonText TEXT, binaryData TEXT)"""
_GPU = """CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
 busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,
 memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT)"""

#: per decode step (µs from the step's first launch): name, grid, duration µs
_STEP = [
    (
        "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)",
        (4, 8, 1),
        50.0,
    ),
    ("_w8a8_block_fp8_matmul", (66, 1, 1), 30.0),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        (16, 1, 1),
        10.0,
    ),
    ("my_custom_op_kernel(float*, int)", (264, 1, 1), 10.0),
]


def _nsys_db(path: Path, *, old: bool = False) -> Path:
    """Three NVTX ``decode_step_<i>`` ranges on the host, each launching the kernels of
    ``_STEP`` back to back on the GPU (ns). ``old``: names stored as text in a ``name``
    column and the SM count in TARGET_INFO_CUDA_DEVICE, as older exports have it."""
    db = sqlite3.connect(path)
    strings = ["decode_step", "cudaLaunchKernel", *(n for n, _, _ in _STEP)]
    db.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    db.executemany("INSERT INTO StringIds VALUES (?,?)", list(enumerate(strings)))
    if old:
        db.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, streamId INTEGER, "
            "correlationId INTEGER, name TEXT, gridX INTEGER, gridY INTEGER, gridZ INTEGER)"
        )
        db.execute("CREATE TABLE TARGET_INFO_CUDA_DEVICE (name TEXT, numMultiprocessors INTEGER)")
        db.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES ('NVIDIA H100 80GB HBM3', 132)")
    else:
        db.execute(_KERNEL)
        db.execute(_GPU)
        db.execute(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount) VALUES (0, 0, 'NVIDIA H200', 132)"
        )
    db.execute(_RUNTIME)
    db.execute(_NVTX)
    corr = 100
    for step in range(3):
        t0 = 1_000_000_000 + step * 2_000_000  # a step every 2 ms
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?,?,59,?,1)",
            (t0, t0 + 400_000, f"decode_step_{step}"),
        )
        gpu = t0 + 100_000
        for k, (name, (gx, gy, gz), dur) in enumerate(_STEP):
            launch = t0 + 10_000 * (k + 1)
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,0,1,?,1,0,NULL)",
                (launch, launch + 5_000, corr),
            )
            end = gpu + int(dur * 1000)
            if old:
                db.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,7,?,?,?,?,?)",
                    (gpu, end, corr, name, gx, gy, gz),
                )
            else:
                sid = strings.index(name)
                db.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                    "streamId, correlationId, demangledName, shortName, registersPerThread, gridX, "
                    "gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
                    "localMemoryPerThread, localMemoryTotal, gridId) "
                    "VALUES (?,?,0,1,7,?,?,?,32,?,?,?,128,1,1,0,0,0,0,?)",
                    (gpu, end, corr, sid, sid, gx, gy, gz, corr),
                )
            gpu = end + 2_000  # 2 µs launch gap
            corr += 1
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("old", [False, True])
def test_nsys_export_steps_categories_occupancy(tmp_path: Path, old: bool) -> None:
    tr = read_trace(_nsys_db(tmp_path / "export.sqlite", old=old))
    assert tr.format == "nsys" and tr.sm_count == 132
    p = analyze(tr, segment="decode")
    assert p.n_steps == 3 and p.step_source.startswith("NVTX ranges matching 'decode'")
    # projected GPU span: first kernel start to last kernel end = 100 µs of kernels + 3 gaps
    assert all(s.span_us == pytest.approx(106.0) and s.kernels == 4 for s in p.steps)
    assert all(
        s.busy_us == pytest.approx(100.0) and s.idle_us == pytest.approx(6.0) for s in p.steps
    )
    cats = {r.name: r.share for r in p.categories}
    assert cats == pytest.approx(
        {"attention": 0.5, "fp8_gemm": 0.3, "communication": 0.1, "other": 0.1}
    )
    fp8 = next(r for r in p.categories if r.name == "fp8_gemm")
    assert fp8.amdahl_free == pytest.approx(1 / (1 - 30 / 106))
    occ = {o.name[:20]: (o.blocks, o.share) for o in p.occupancy}
    assert occ == {
        "void flash::flash_fw": (32, pytest.approx(0.5)),
        "_w8a8_block_fp8_matm": (66, pytest.approx(0.3)),
        "ncclDevKernel_AllRed": (16, pytest.approx(0.1)),
    }
    assert "GPU-bound" in p.verdict


def test_not_a_trace_and_a_foreign_sqlite(tmp_path: Path) -> None:
    f = tmp_path / "x.sqlite"
    sqlite3.connect(f).execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(TraceError, match=r"x\.sqlite: no CUPTI_ACTIVITY_KIND_KERNEL table"):
        read_trace(f)
    g = tmp_path / "list.json"
    g.write_text("[1, 2]")
    with pytest.raises(TraceError, match=r"list\.json: invalid JSON at byte 0 .*expected '\{'"):
        read_trace(g)
    with pytest.raises(TraceError, match=r"nothere\.json: no such file"):
        read_trace(tmp_path / "nothere.json")


# ----------------------------------------------------------------------------------- CLI


def test_cli_json_store_and_report_section(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    r = cli("profile", str(GRAPH), "--json", "--campaign", "prof", "--db", str(db), cwd=tmp_path)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["mean_step"]["kernels"] == 813 and data["graph_launches"] == 16
    with Store(db) as store:
        (row,) = store.analyses("profile", campaign="prof")
        assert row["name"] == GRAPH.name and row["data"]["segment"] == "decode"
        rep = build_report(store, "prof")
    md, html = render_markdown(rep), render_html(rep)
    assert "Where the time goes" in md and "GPU-bound" in md
    assert "| elementwise/copy |" in md and "<script" not in html
    assert "direct_copy_kernel_cuda" in html


def test_cli_tables_diff_and_errors(cli: Cli, tmp_path: Path) -> None:
    r = cli("profile", str(MOE), "--vs", str(GRAPH), "--top", "5", cwd=tmp_path)
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "kernels busy 4.67 of 20.3 ms per decode step (23%): launch-bound" in out
    assert "vectorized_gather_kernel<long>" in out and "45.2%" in out
    assert "64 on 132" in out  # an under-occupied grid
    assert "categories: B vs A (ms per step)" in out and "A = " in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel" "name": "k"}]}')
    r = cli("profile", str(bad), cwd=tmp_path)
    assert r.exit_code == 2
    assert "Traceback" not in r.stderr
    assert re.search(r"error: .*bad\.json: invalid JSON at byte 45 \(line 1, column 46\)", r.stderr)
    r = cli("profile", str(MOE), "--segment", "verify", cwd=tmp_path)
    assert r.exit_code == 2 and "--segment: expected decode, prefill or all" in r.stderr


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

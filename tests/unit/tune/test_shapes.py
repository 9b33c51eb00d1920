"""Which shapes to tune: --shape values, batch sizes, a real DeepSeek-V3 config.json, and the
untuned shapes real server logs report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.errors import ConfigError
from inferlab.tune.shapes import (
    DEFAULT_BATCH_SIZES,
    Shape,
    collect_shapes,
    dedupe,
    parse_batch_sizes,
    parse_shape,
    shapes_from_log,
    shapes_from_model_config,
)
from support import FIXTURES

FIX = FIXTURES
V3 = FIX / "tune" / "deepseek-v3-config.json"
LOGS = FIX / "engine_logs" / "sglang_fp8_default"
H20_LOG = LOGS / "sglang-pr5675_h20-w8a8-default-single-line.log"
VLLM_LOG = LOGS / "vllm-benchmarks-deepgemm-readme_h100_w8a8-default-and-using-configuration.log"
TUNED_LOG = LOGS / "sglang-pr5390_b200-dp8-using-configuration-from.log"


def test_parse_shape() -> None:
    assert parse_shape("7168,2048") == Shape(7168, 2048)
    assert parse_shape(" 24576 , 1536 ").n == 24576
    assert parse_shape("2112x7168") == Shape(2112, 7168)


@pytest.mark.parametrize("bad", ["7168", "a,b", "0,2048", "1,2,3", ""])
def test_parse_shape_errors_name_the_value(bad: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_shape(bad)
    assert f"--shape {bad!r}" in str(ei.value)


def test_batch_sizes() -> None:
    assert parse_batch_sizes(None) == list(DEFAULT_BATCH_SIZES)
    assert len(DEFAULT_BATCH_SIZES) == 18 and DEFAULT_BATCH_SIZES[-1] == 4096
    assert parse_batch_sizes("64,1,16,16,") == [1, 16, 64]
    for bad, needle in (("1,x", "'x' is not an integer"), ("0", "≥ 1"), (",", "no batch")):
        with pytest.raises(ConfigError, match=needle):
            parse_batch_sizes(bad)


def test_dedupe_keeps_first_and_merges_sources() -> None:
    out = dedupe([Shape(1, 2, "a"), Shape(3, 4, "b"), Shape(1, 2, "c"), Shape(1, 2, "a")])
    assert [(s.n, s.k, s.source) for s in out] == [(1, 2, "a, c"), (3, 4, "b")]


def test_deepseek_v3_tp1_has_the_measured_shapes() -> None:
    shapes = shapes_from_model_config(V3, 1)
    got = {(s.n, s.k) for s in shapes}
    assert got == {
        (2112, 7168),  # fused q_a + kv_a: 1536 + 512 + 64
        (24576, 1536),  # q_b: 128 heads × (128 + 64)
        (32768, 512),  # kv_b: 128 × (128 + 128)
        (7168, 16384),  # o_proj: K = 128 × 128
        (36864, 7168),  # dense gate_up: 2 × 18432
        (7168, 18432),  # dense down
        (4096, 7168),  # shared expert gate_up: 2 × 2048
        (7168, 2048),  # shared expert down
    }
    # the four shapes of the H200 measurement table are all among them
    assert {(7168, 2048), (4096, 7168), (24576, 1536), (2112, 7168)} <= got
    src = {(s.n, s.k): s.source for s in shapes}
    assert "q_b_proj" in src[(24576, 1536)] and "tp=1" in src[(24576, 1536)]


def test_deepseek_v3_tp8_matches_sglangs_tuning_script() -> None:
    # sglang benchmark/kernels/quantization/tuning_block_wise_kernel.py get_weight_shapes(8):
    # N split: (4608,7168) (4096,512) (3072,1536) (512,7168); K split: (7168,2304) (7168,2048)
    # (7168,256); plus the fused q_a/kv_a projection current engines run, unsplit
    got = [(s.n, s.k) for s in shapes_from_model_config(V3, 8)]
    assert len(got) == len(set(got)) == 8  # o_proj (7168, 2048) == shared down at tp=1: deduped
    assert set(got) == {
        (2112, 7168),
        (3072, 1536),
        (4096, 512),
        (7168, 2048),
        (4608, 7168),
        (7168, 2304),
        (512, 7168),
        (7168, 256),
    }


def test_model_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kv_b_proj N = 32768 does not split over --tp 3"):
        shapes_from_model_config(V3, 3)
    with pytest.raises(ConfigError, match="not a multiple of the 128-wide"):
        shapes_from_model_config(V3, 64)
    cfg = json.loads(V3.read_text())
    del cfg["kv_lora_rank"], cfg["v_head_dim"]
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError) as ei:
        shapes_from_model_config(p, 1)
    assert str(p) in str(ei.value) and "kv_lora_rank, v_head_dim" in str(ei.value)
    p.write_text('{"hidden_size": 7168,\n  oops}')
    with pytest.raises(ConfigError, match=r"not valid JSON \(line 2"):
        shapes_from_model_config(p, 1)
    with pytest.raises(ConfigError, match="--tp 0"):
        shapes_from_model_config(V3, 0)


def test_collect_requires_some_source_and_tp() -> None:
    with pytest.raises(ConfigError, match="no shapes"):
        collect_shapes([])
    with pytest.raises(ConfigError, match="needs --tp"):
        collect_shapes([], model_config=V3)
    with pytest.raises(ConfigError, match="--tp only applies"):
        collect_shapes(["1,128"], tp=2)
    shapes, _, _ = collect_shapes(["7168,2048", "2112,7168"], model_config=V3, tp=1)
    assert [(s.n, s.k) for s in shapes[:2]] == [(7168, 2048), (2112, 7168)]
    assert len(shapes) == 8 and "--shape" in shapes[0].source


# -- logs (the parser is inferlab.logs.untuned_fp8_gemms) ---------------------------------------


def test_sglang_h20_log_gives_its_shape_and_device() -> None:
    found = shapes_from_log(H20_LOG)
    assert [(s.n, s.k) for s in found.shapes] == [(2112, 7168)]
    assert found.devices == ["NVIDIA_H20"] and found.warnings == []
    assert H20_LOG.name in found.shapes[0].source


def test_log_from_another_gpu_warns() -> None:
    found = shapes_from_log(H20_LOG, local_device="NVIDIA H200")
    assert len(found.warnings) == 1
    w = found.warnings[0]
    assert "NVIDIA_H20" in w and "NVIDIA_H200" in w and "tune on the GPU that serves" in w
    assert shapes_from_log(H20_LOG, local_device="NVIDIA H20").warnings == []


def test_vllm_log_only_untuned_shapes() -> None:
    # N=4096,K=7168 and N=18432,K=7168 fell back to the default config; N=7168,K=18432 was tuned
    found = shapes_from_log(VLLM_LOG)
    assert [(s.n, s.k) for s in found.shapes] == [(4096, 7168), (18432, 7168)]
    assert found.devices == ["NVIDIA_H100_80GB_HBM3"]


def test_log_with_only_tuned_shapes_says_so(tmp_path: Path) -> None:
    found = shapes_from_log(TUNED_LOG)
    assert found.shapes == [] and "no 'Using default W8A8" in found.warnings[0]
    with pytest.raises(ConfigError, match="does not exist"):
        shapes_from_log(tmp_path / "missing.log")


def test_repeated_warnings_are_deduplicated(tmp_path: Path) -> None:
    line = H20_LOG.read_text().splitlines()[0]
    log = tmp_path / "server.log"
    log.write_text("\n".join([line, line.replace("TP0", "TP1"), "unrelated", line]) + "\n")
    assert [(s.n, s.k) for s in shapes_from_log(log).shapes] == [(2112, 7168)]

"""Tuned kernel configs (``recon.tuned``): SGLang's names and Triton subdirectories, MoE
shapes from a real SGLang log."""

from __future__ import annotations

from pathlib import Path

from inferlab.recon.engines import config_dirs_for
from inferlab.recon.tuned import NeededShape, match_needed, parse_config_name, scan_dir
from support import FIXTURES

# -- tuned configs ---------------------------------------------------------------------------

H100 = "NVIDIA_H100_80GB_HBM3"


def test_sglang_names_and_triton_subdirs(tmp_path: Path) -> None:
    """SGLang spells block shapes '[128, 128]' and keeps MoE files per Triton version."""
    pkg = tmp_path / "sglang"
    dirs = config_dirs_for("sglang", pkg, "3.5.1", "0.5.10")  # both directories moved later
    assert dirs["fused_moe"] == pkg / "srt/layers/moe/fused_moe_triton/configs/triton_3_5_1"
    assert dirs["fp8_gemm"] == pkg / "srt/layers/quantization/configs"
    fp8 = dirs["fp8_gemm"]
    fp8.mkdir(parents=True)
    (
        fp8 / f"N=2112,K=7168,device_name={H100},dtype=fp8_w8a8,block_shape=[128, 128].json"
    ).write_text("{}")
    (fp8 / "README.md").write_text("")
    moe_root = dirs["fused_moe"].parent
    (moe_root / "triton_3_4_0").mkdir(parents=True)
    moe = f"E=257,N=128,device_name={H100},dtype=fp8_w8a8,block_shape=[128, 128]"
    (moe_root / "triton_3_4_0" / f"{moe}.json").write_text("{}")
    (moe_root / "triton_3_4_0" / f"{moe}_down.json").write_text("{}")
    (moe_root / "triton_3_4_0" / "not-a-config.json").write_text("{}")
    g, m = scan_dir("fp8_gemm", fp8), scan_dir("fused_moe", moe_root)
    assert [(f.n, f.k, f.block_shape) for f in g.files] == [(2112, 7168, (128, 128))]
    assert [(f.e, f.n, f.subdir, f.down) for f in m.files] == [
        (257, 128, "triton_3_4_0", False),
        (257, 128, "triton_3_4_0", True),
    ]
    assert m.unparsed == 1

    def need(kind: str, n: int, k: int | None, e: int | None, dev: str = H100) -> NeededShape:
        return NeededShape(kind, dev, n, k, e, "fp8_w8a8", (128, 128), [7], None)

    rows = match_needed(
        [
            need("fp8_gemm", 2112, 7168, None),
            need("fp8_gemm", 2112, 7168, None, dev="NVIDIA_H20"),
            need("fused_moe", 128, None, 257),
            need("fused_moe", 256, None, 257),
        ],
        [g, m],
        current_subdir="triton_3_5_1",
    )
    assert [r.present for r in rows] == [True, False, True, False]
    assert rows[2].files == [f"triton_3_4_0/{moe}.json"]  # the _down file is not the same
    assert rows[2].in_current_subdir is False and rows[2].current_subdir == "triton_3_5_1"
    # without any searched directory the answer is unknown, not "no"
    assert match_needed([need("fp8_gemm", 1, 2, None)], [])[0].present is None
    assert parse_config_name("E=8,N=7168,device_name=NVIDIA_A100-SXM4-80GB.json") is not None
    assert parse_config_name("N=7168,device_name=X.json") is None


def test_moe_shapes_from_a_real_sglang_log(tmp_path: Path) -> None:
    """SGLang 0.5.8 on Triton 3.5.1 fell back to a triton_3_4_0 MoE config and had no _down
    file: with that file installed under triton_3_4_0 only, the table says 'present, but a
    fallback' for the first and 'no' for the _down file."""
    from inferlab.recon.core import needed_from_log

    log = (
        FIXTURES
        / "engine_logs/sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-triton_h100.log"
    )
    moe_root = tmp_path / "configs"
    (moe_root / "triton_3_4_0").mkdir(parents=True)
    name = f"E=257,N=128,device_name={H100},dtype=fp8_w8a8,block_shape=[128, 128].json"
    (moe_root / "triton_3_4_0" / name).write_text("{}")
    rows = match_needed(needed_from_log(log), [scan_dir("fused_moe", moe_root)], "triton_3_5_1")
    by_reason = {r.reason: r for r in rows}
    assert set(by_reason) == {"fallback", "down"}
    fb, down = by_reason["fallback"], by_reason["down"]
    assert (fb.e, fb.n, fb.device, fb.block_shape) == (257, 128, H100, (128, 128))
    assert fb.present is True and fb.in_current_subdir is False
    assert fb.files == [f"triton_3_4_0/{name}"]
    assert down.down and down.present is False and down.shape == "E=257,N=128 (down)"
    assert fb.lines[0] == 2 and down.lines[0] == 3

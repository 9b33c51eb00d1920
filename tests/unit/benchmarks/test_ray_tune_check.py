"""``benchmarks/ray_tune_check.py`` on the real one-H200 tune run of
``benchmarks/fp8_gemm_tune_h200``: the cross-check and the retime's pieces."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import ray_tune_check as rtc

ONE_TUNE = ROOT / "benchmarks/fp8_gemm_tune_h200/tune_full_1gpu.json"


def test_tune_cross_check_on_the_real_h200_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(ONE_TUNE.read_text(encoding="utf-8"))
    assert rtc.main(["--gpu0", str(ONE_TUNE), "--ray", str(ONE_TUNE)]) == 0
    assert "coverage: PASS; 0 cell(s) chose another config" in capsys.readouterr().out
    other = json.loads(json.dumps(doc))
    lost = other["results"].pop()
    first = other["results"][0]["best_engine"]["key"]
    swap = next(r for r in other["results"] if r["best_engine"]["key"] != first)
    other["results"][0]["best_engine"] = dict(swap["best_engine"])
    p = tmp_path / "tune-run-ray.json"
    p.write_text(json.dumps(other), encoding="utf-8")
    assert rtc.main(["--gpu0", str(ONE_TUNE), "--ray", str(p)]) == 1  # a lost cell fails
    out = capsys.readouterr().out
    assert f"missing [({lost['n']}, {lost['k']}, {lost['m']})]" in out
    assert "1 cell(s) chose another config; within 3% on one GPU: not checked" in out


def test_the_retime_uses_pieces_the_tuner_still_has() -> None:
    """The device-only re-time reaches into the tuner's modules: a split that moves them must
    fail here, not on the lent machine."""
    api = rtc.gpu_api()
    assert api.RETIME_LAUNCHES > 0 and api.RETIME_REPLAYS > 0
    assert {"torch", "kernel", "n", "k", "sets"} <= set(api.ShapeContext.__dataclass_fields__)
    assert api.median([3.0, 1.0, 2.0]) == 2.0

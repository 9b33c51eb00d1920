"""The tuning report section, straight from a real store: latest run per shape, escaping."""

from __future__ import annotations

from pathlib import Path

from inferlab.report.sections import build_sections
from inferlab.report.sections.tuning import tuning_section
from inferlab.store import Store
from inferlab.tune.config import DEFAULT_SGLANG
from inferlab.tune.report import store_run
from inferlab.tune.runner import CellResult, TuneRun
from inferlab.tune.saved import parse_run

EVIL = "<script>alert(1)</script>|"


def _run(device: str, tuned_us: float) -> TuneRun:
    cfg = DEFAULT_SGLANG
    cell = CellResult(
        n=7168, k=2048, m=16, default=cfg, default_us=18.8, best=cfg, best_us=tuned_us,
        best_engine=cfg, best_engine_us=tuned_us, samples_us=[tuned_us], tflops=0.0, gbps=0.0,
        roof_pct=0.0, rel_err=0.0, candidates=1, screened=1,
    )  # fmt: skip
    return TuneRun(device, 1, {"copy_gbps": 4270.0, "fp8_tflops": 1314.0}, [cell], 1.0, 0.5)


def test_section_shows_latest_per_shape_escaped(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        assert tuning_section(store, "c") is None
        for dev, us in (("old", 12.0), (EVIL, 9.0)):
            run = parse_run(_run(dev, us).to_json())
            store_run(store, run, campaign="c", engine="sglang", warnings=[f"N=7168,K=2048 {EVIL}"])
        sec = tuning_section(store, "c")
        assert sec is not None and sec.key == "tuning"
        assert [s.key for s in build_sections(store, "c")] == ["tuning"]
        assert tuning_section(store, "other") is None
    assert "| 16 | 18.8 | 9.0 | 2.09× |" in sec.markdown and "12.0" not in sec.markdown
    assert "<script>" not in sec.markdown and "<script>" not in sec.html
    assert "&lt;script&gt;" in sec.html and "\\|" in sec.markdown

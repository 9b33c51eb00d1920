"""``inferlab import``: real result files of other tools into the store, all or nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from inferlab.errors import ConfigError
from inferlab.store import Store
from inferlab.store.ingest import import_files
from support import FIXTURES

FIX = FIXTURES / "imports"
VLLM = FIX / "vllm-0.17.1_bench-serve_save-result_llama31-8b_conc12_run1.json"
SGLANG = FIX / "sglang-bench-serving-output-file_llama33-70b-h200_online.jsonl"


def test_vllm_file_with_requests(tmp_path: Path) -> None:
    with Store(tmp_path / "i.db") as store:
        (imp,) = import_files(store, [VLLM])
        (run,) = store.runs(run_ids=imp.run_ids)
        reqs = store.requests(run.id)
    assert run.source == "import:vllm bench serve" and run.label == "C=12"
    assert run.metrics_version is None and "vllm" in run.definitions.lower()
    assert len(reqs) == 20 and imp.with_requests == 1
    assert sum(r.output_tokens for r in reqs if r.ok) == 1280  # total_output_tokens in the file
    # vLLM's chat TTFT stops at the role-only chunk; by inferlab's definition the first token
    # arrives one chunk gap later: 0.08390774 s + 5.71 µs (the file's ttfts[0] + itls[0][0])
    assert reqs[0].ttft_ns == pytest.approx(
        (0.08390774100007548 + 5.710000550607219e-06) * 1e9, abs=1000
    )
    assert run.summary["output_tok_s"] == pytest.approx(444.8905599981961)
    assert run.summary["ttft_ms"]["count"] == 20


def test_summary_only_file_and_campaign(tmp_path: Path) -> None:
    with Store(tmp_path / "i.db") as store:
        (imp,) = import_files(store, [SGLANG], campaign="h200", config="sglang-70b")
        runs = store.runs(campaign="h200")
    assert len(runs) == len(imp.run_ids) >= 2
    assert all(r.config == "sglang-70b" and r.n_requests == 0 for r in runs)
    assert all(r.summary["imported"] and r.summary["output_tok_s"] > 0 for r in runs)


def test_damaged_file_imports_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text(VLLM.read_text()[:500])
    good = tmp_path / "good.json"
    shutil.copy(VLLM, good)
    with Store(tmp_path / "i.db") as store:
        with pytest.raises(ConfigError, match="broken.json"):
            import_files(store, [good, bad])
        assert store.runs() == []  # every file is parsed before anything is stored

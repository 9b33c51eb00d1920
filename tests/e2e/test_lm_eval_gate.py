"""The lm-eval gate in a campaign of reference-engine servers: EleutherAI's harness (its cached
environment, inferlab.envs.lmeval) really runs a tiny local task against each config's OpenAI
endpoint and scores it; the raw per-sample results are stored; a config whose answers change
(another seed) is stopped before measurement with the figures, a lossless twin passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.campaign import run_and_read, write_campaign
from support.lmeval_task import TASK, write_task


@pytest.fixture(scope="module")
def harness_env() -> Path:
    """The cached lm-eval environment (built here when missing: about 3 min)."""
    from inferlab.envs.lmeval import ensure_lm_eval

    try:
        return ensure_lm_eval(log=lambda line: print(line, file=sys.stderr))
    except (RuntimeError, OSError) as exc:  # no index to install from: say why
        pytest.skip(f"the lm-eval environment cannot be built here: {exc}")


def test_the_harness_gates_a_config_whose_answers_change(
    tmp_path: Path, harness_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # the datasets cache, not the user's
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    tasks = write_task(tmp_path / "tasks", docs=20, wrong=5)
    gate = {"tasks": [TASK], "include_path": str(tasks), "include_defaults": False,
            "max_drop": 0.1}  # fmt: skip
    path = write_campaign(
        tmp_path / "c.toml",
        name="evalgate",
        config=[
            {"name": "baseline"},
            {"name": "twin", "extends": "baseline", "set": {"--itl-ms": "2"}},
            {"name": "reseeded", "extends": "baseline", "set": {"--seed": "7"}},
        ],
        verify={"probes": [], "length_tokens": 4, "eval": gate},
        load={"requests": 2},
    )
    res, rows, page = run_and_read(path, tmp_path / "db", "evalgate")
    status = {o.config: o.status for o in res.outcomes}
    assert status == {"baseline": "measured", "twin": "measured", "reseeded": "verify-failed"}
    failed = next(o for o in res.outcomes if o.config == "reseeded")
    assert "eval: lm-eval sim_words exact_match: config 0.000 vs reference 0.750" in failed.message
    assert "difference -0.750" in failed.message and "< -0.1" in failed.message
    checks = {n: (p, json.loads(d)) for n, k, p, d in rows if k == "eval"}
    assert checks["baseline"][1]["detail"]["verdict"] == "reference"
    twin = checks["twin"][1]["detail"]
    assert checks["twin"][0] and twin["diff"] == {"estimate": 0.0, "low": 0.0, "high": 0.0,
                                                  "level": 0.95}  # fmt: skip
    re_ = checks["reseeded"][1]["detail"]
    assert not checks["reseeded"][0] and re_["verdict"] == "fail" and re_["changed"] == 15
    assert re_["diff"]["high"] < -0.1  # the whole interval is past the limit
    # the harness's own per-sample records, as it wrote them
    samples = {n: json.loads(d) for n, k, _, d in rows if k == "eval-samples"}
    assert set(samples) == {"baseline", "twin", "reseeded"}
    docs = samples["baseline"]["samples"][TASK]
    assert len(docs) == 20 and {d["doc_id"] for d in docs} == set(range(20))
    first = docs[0]
    assert first["target"] == first["filtered_resps"][0] and first["exact_match"] == 1.0
    assert samples["baseline"]["results"][TASK]["exact_match,strip"] == 0.75
    assert "| reseeded | eval | **FAIL** | lm-eval sim_words exact_match" in page
    assert "lm-eval 0.4.13 samples stored (20 documents of sim_words)" in page

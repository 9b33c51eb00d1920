"""The verification section's distribution-agreement table: each config's newest figures from
the gate's own stored detail, the decision and why; a stopped config reads as stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab.config.lossy import LossyGate
from inferlab.report.agreement import agreement_rows
from inferlab.report.render import build_report, render_html, render_markdown
from inferlab.store import Store
from inferlab.verify.agreement import PromptFigures, agreement
from inferlab.verify.checks import CheckResult
from inferlab.verify.gate import decide

LIMITS = LossyGate(max_kl=0.01, min_top1=0.98)


def _detail(kl_per_pos: float, agree: int, gating: bool) -> dict[str, Any]:
    """The agreement check as verification stores it (``CheckResult.to_json``)."""
    figs = [PromptFigures(32, agree, 32 * kl_per_pos, 32 * kl_per_pos, 0.1, 0.2, 0.0)] * 16
    verdict, msg, detail = decide(agreement(figs), LIMITS)
    detail["gating"] = gating
    return CheckResult("agreement", verdict == "pass", msg, detail, gating=gating).to_json()


def _store(path: Path) -> None:
    with Store(path) as store, store.transaction():
        cid = store.campaign_id("agr")
        ids = {n: store.config_id(cid, n, engine="vllm", model="m") for n in ("base", "ngram", "bf16", "fp8")}  # fmt: skip
        ref = {"prompts": ["a", "b"], "continuations": ["x", "y"], "top_k": 20, "tokens": 32,
               "positions": [[], []], "seed": 0}  # fmt: skip
        store.add_verification(ids["base"], "logprob-reference", True, ref)
        store.add_verification(ids["ngram"], "agreement", True, _detail(0.0, 32, gating=False))
        store.add_verification(ids["bf16"], "agreement", False, _detail(0.5, 32, gating=True))
        store.add_verification(ids["bf16"], "agreement", True, _detail(0.001, 32, gating=True))
        store.add_verification(ids["fp8"], "agreement", False, _detail(0.05, 30, gating=True))


def test_rows_show_the_newest_figures_and_the_decision(tmp_path: Path) -> None:
    _store(tmp_path / "db")
    with Store(tmp_path / "db") as store:
        rows = {r.config: r for r in agreement_rows(store, "agr")}
    assert list(rows) == ["base", "ngram", "bf16", "fp8"]
    assert rows["base"].cells[1] == "reference" and "top-20, 2 prompts" in rows["base"].cells[-1]
    ngram = rows["ngram"].cells
    assert ngram[1:4] == ("information", "100.00% (95% [100.00%, 100.00%])", "0 (95% [0, 0])")
    assert ngram[6] == "16 (512)" and ngram[-1].startswith("for information (lossless")
    bf16 = rows["bf16"]  # the newest of its two checks
    assert not bf16.stopped and bf16.cells[-1].startswith("passed: the pessimistic ends")
    assert (
        bf16.cells[3] == "0.001 (95% [0.001, 0.001])" and bf16.cells[7] == "KL ≤ 0.01, top-1 ≥ 98%"
    )
    fp8 = rows["fp8"]
    assert fp8.stopped
    assert fp8.cells[-1] == (
        "STOPPED before measurement: KL upper bound's high end 0.05 > max_kl 0.01; "
        "top-1's low end 93.75% < min_top1 98.00%"
    )


def test_the_report_shows_the_table_in_both_formats(tmp_path: Path) -> None:
    _store(tmp_path / "db")
    with Store(tmp_path / "db") as store:
        report = build_report(store, "agr")
    md, html = render_markdown(report), render_html(report)
    assert "### Distribution agreement with the baseline" in md
    assert (
        "| fp8 | gating | 93.75% (95% \\[93.75%, 93.75%\\]) | 0.05 (95% \\[0.05, 0.05\\]) |" in md
    )
    assert "<h3>Distribution agreement with the baseline</h3>" in html
    assert "<td>STOPPED before measurement: KL upper bound&#x27;s high end 0.05" in html


def test_a_check_stored_before_the_upper_bound_was_gated_says_so(tmp_path: Path) -> None:
    """A check of 82ddb2d's gate stored the lumped KL interval, a bare ``kl_high`` (not gated)
    and a bootstrap of the largest TV: the row says which bound the decision read."""
    old = {
        "verdict": "fail", "max_kl": 0.01, "min_top1": 0.95, "prompts": 64, "positions": 2128,
        "kl": {"estimate": 0.0799, "low": 0.0770, "high": 0.0831, "level": 0.95},
        "kl_high": 2.78, "tail": 0.097, "log_floor": -30.0,
        "top1": {"estimate": 0.80, "low": 0.78, "high": 0.82, "level": 0.95},
        "tv_max": {"estimate": 0.416, "low": 0.39, "high": 0.416, "level": 0.95},
    }  # fmt: skip
    with Store(tmp_path / "db") as store, store.transaction():
        cid = store.campaign_id("old")
        fp8 = store.config_id(cid, "fp8", engine="vllm", model="m")
        stored = {
            "kind": "agreement",
            "passed": False,
            "message": "m",
            "detail": old,
            "gating": True,
        }
        store.add_verification(fp8, "agreement", False, stored)
    with Store(tmp_path / "db") as store:
        (row,) = agreement_rows(store, "old")
    assert row.cells[4] == "2.78 (not gated)" and row.cells[5] == "0.416 (95% [0.39, 0.416])"
    assert row.cells[-1].startswith("STOPPED before measurement: lumped KL's high end 0.0831")

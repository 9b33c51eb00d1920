"""The campaign runner mines every launch log (real reference-engine processes, real store):
the failed launch's CUDA-graph OOM and the measured config's plateau reach the store and the
report; a recon snapshot is stored when the campaign starts."""

from __future__ import annotations

from pathlib import Path

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.report.render import build_report, render_html, render_markdown
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import EAGLE, SEED


def test_runner_stores_log_findings_and_report_shows_them(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        name="logmine",
        args=[*SEED, "--time-scale", "0.02", "--decode-log-interval", "2"],
        config=[{"name": "base"}, {"name": "mtp", "args": EAGLE}],
        load={
            "workload": {"kind": "random", "input_tokens": 16, "output_tokens": 48},
            "concurrency": [1, 8, 16],
            "requests": 16,
        },
    )
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        assert {o.config: o.status for o in res.outcomes} == {
            "base": "measured",
            "mtp": "launch-failed",
        }
        found = {(f.config, f.kind): f for f in store.findings("logmine")}
        oom = found[("mtp", "oom-graph-capture")]
        assert oom.message.startswith(
            "OOM during CUDA-graph capture at --mem-fraction-static 0.70 (asked "
        )
        assert oom.message.endswith("lower it (e.g. 0.60) or cap --cuda-graph-max-bs")
        assert oom.evidence["simulated"] is True and oom.evidence["mem_fraction_static_line"] == 1
        assert str(oom.source).endswith(".log") and Path(str(oom.source)).name.startswith("mtp-")
        assert len(oom.evidence["engine_remedies"]) == 4
        plateau = found[("base", "decode-plateau")]
        ev = plateau.evidence
        # load points C=1, 8, 16 (levels between them are passed while requests drain); the
        # preset saturates by C=8, so the plateau starts above 1 and at most at 8
        assert 1 < ev["from_running"] <= 8 and ev["max_running_seen"] == 16
        assert ev["median_tok_s_by_running"]["1"] < 0.6 * ev["plateau_tok_s"]
        assert plateau.message.endswith(
            f"from {ev['from_running']} running requests: more concurrency will not help"
        )
        # recon before acting: one snapshot of this machine stored with the campaign
        (rec,) = store.analyses("recon", campaign="logmine")
        assert rec.data.to_json()["env"] is not None and rec.data.to_json()["inferlab_version"]
        rep = build_report(store, "logmine")
        md, html = render_markdown(rep), render_html(rep)
    assert "## Environment recon" in md and 'id="recon"' in html
    assert "## Log findings" in md and "### mtp" in md
    assert "OOM during CUDA-graph capture at --mem-fraction-static 0.70" in md
    assert 'id="findings"' in html and "decode throughput plateaus" in html

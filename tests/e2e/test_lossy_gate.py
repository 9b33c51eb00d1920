"""The distribution-agreement gate in a campaign of reference-engine servers: a lossy config
tempered past the limit stops before measurement with its figures, one inside it is measured,
a lossless one gets the figures for information, and the report shows them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.campaign import run_and_read, write_campaign

GATE = {"max_kl": 0.01, "min_top1": 0.98, "prompts": 8, "max_prompts": 16, "tokens": 12}
#: 20 words: the top-20 lists every token, so the gated KL upper bound is the exact KL
WHOLE = ["--vocab-size", "21"]


def test_the_gate_stops_a_config_past_the_limit(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        name="gate",
        config=[
            {"name": "baseline", "args": WHOLE},
            {"name": "twin", "extends": "baseline", "set": {"--itl-ms": "2"}},
            {
                "name": "near",
                "extends": "baseline",
                "args": [*WHOLE, "--logprob-shift", "0.002"],
                "lossless": False,
            },
            {
                "name": "far",
                "extends": "baseline",
                "args": [*WHOLE, "--logprob-shift", "0.02"],
                "lossless": False,
            },
        ],
        verify={"probes": [], "length_tokens": 4, "lossy": GATE},
        load={"requests": 2},
    )
    res, rows, page = run_and_read(path, tmp_path / "db", "gate")
    status = {o.config: o.status for o in res.outcomes}
    assert status == {"baseline": "measured", "twin": "measured", "near": "measured",
                      "far": "verify-failed"}  # fmt: skip
    far = next(o for o in res.outcomes if o.config == "far")
    kl = re.search(r"agreement: KL upper bound ([0-9.]+) nats/token", far.message)
    assert kl is not None and 0.015 < float(kl.group(1)) < 0.025, far.message  # 2× the limit
    assert re.search(r"\(high end [0-9.]+\) > 0.01;", far.message), far.message
    agree = {n: (passed, json.loads(d)) for n, k, passed, d in rows if k == "agreement"}
    assert set(agree) == {"twin", "near", "far"}  # the baseline made the reference
    twin, near, far_ = (agree[n][1]["detail"] for n in ("twin", "near", "far"))
    assert twin["gating"] is False and twin["kl_upper"]["high"] == 0.0  # deterministic batching
    assert agree["near"][0] and near["gating"] is True and near["kl_upper"]["high"] < 0.01
    assert not agree["far"][0] and far_["verdict"] == "fail" and far_["kl"]["low"] > 0.01
    assert any(k == "logprob-reference" and n == "baseline" for n, k, _, _ in rows)
    assert f"| far | agreement | **FAIL** | KL upper bound {kl.group(1)}" in page
    assert "not gating (lossless): KL upper bound 0 nats/token" in page
    assert "reference logprobs stored (16 prompts, top-20, 12 tokens each)" in page
    # the verification section's agreement table: figures, limits and the decision per config
    assert (
        "| twin | information | 100.00% (97.5% \\[100.00%, 100.00%\\]) | 0 (97.5% \\[0, 0\\]) "
        "| 0 (97.5% \\[0, 0\\]) | \\[0, " in page  # looks of 8 and 16: 97.5% each
    )
    assert "| near | gating |" in page and "passed: the pessimistic ends are inside" in page
    far_row = next(line for line in page.splitlines() if line.startswith("| far | gating |"))
    assert "| STOPPED before measurement: KL upper bound's high end " in far_row
    assert "> max_kl 0.01" in far_row.replace("&gt;", ">")

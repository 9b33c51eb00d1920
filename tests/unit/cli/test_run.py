"""``inferlab run`` in process without launching anything: bad input without a Ray cluster,
``--dry-run`` prints the levers and never the secrets."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from inferlab.secrets import (
    REDACTED,
)
from support.campaign import CampaignToml
from support.cli import Cli


def test_cli_bad_input_without_a_cluster(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    camp = tmp_path / "c.toml"
    camp.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "sim"\n[[config]]\nname = "a"\n'
        "[load]\nconcurrency = [1]\nrequests = 2\n"
    )
    with monkeypatch.context() as m:  # the extra not installed: `import ray` fails
        m.setitem(sys.modules, "ray", None)
        p = cli("run", str(camp), "--ray", "auto")
    assert p.exit_code == 2 and "pip install 'inferlab[ray]'" in p.stderr, p.stderr
    # imported first: ray's import sets RAY_CLIENT_MODE, which the in-process runner would
    # read as the command's change to the process (the file did it first, before the split)
    import ray  # noqa: F401

    t0 = time.monotonic()
    p = cli("run", str(camp), "--ray", "127.0.0.1:1")
    assert p.exit_code == 2 and "cannot reach a Ray cluster at 127.0.0.1:1" in p.stderr
    assert time.monotonic() - t0 < 10
    p = cli("bench", "--url", "http://127.0.0.1:1", "-c", "1", "--requests", "1", "--clients", "2")
    assert p.exit_code == 2 and "--clients: needs --ray" in p.stderr
    p = cli("tune", "fp8-gemm", "--shape", "7168,2048", "--ray", "auto", "--devices", "0")
    assert p.exit_code == 2 and "--ray: Ray gives each actor one GPU" in p.stderr


# --- ``run --dry-run`` prints the levers, never the secrets


def test_dry_run_prints_levers_never_secrets(cli: Cli, campaign_toml: CampaignToml) -> None:
    path = campaign_toml(
        name="sec",
        engine={
            "args": ["--ttft-ms", "5", "--api-key", "sk-planted-0123456789abcdef"],
            "env": {"HF_TOKEN": "hf_plantedplantedplanted00", "NCCL_PROTO": "LL"},
            "ready_timeout_s": None,
            "stop_grace_s": None,
        },
        config=[
            {"name": "baseline"},
            {"name": "B", "extends": "baseline", "set": {"--max-total-tokens": "4096"}},
        ],
        verify=None,
        load={"workload": None, "requests": 2},
    )
    p = cli("run", str(path), "--dry-run", env={"COLUMNS": "250"})
    assert p.exit_code == 0, p.stderr
    assert "sk-planted" not in p.stdout + p.stderr and "hf_planted" not in p.stdout + p.stderr
    assert f"--api-key {REDACTED}" in p.stdout and f"HF_TOKEN={REDACTED}" in p.stdout
    assert "NCCL_PROTO=LL" in p.stdout and "+ --max-total-tokens 4096" in p.stdout

"""The default ``[verify]`` probe fits the engine: the reference engine, which speaks no
language, is asked for text; an engine that serves a language model is held to "Paris"."""

from __future__ import annotations

import re
from pathlib import Path

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.campaign import DEFAULT_PROBES, VerifySection, load_campaign
from inferlab.engines import get_engine, registered
from inferlab.store import Store
from inferlab.verify import verify_endpoint
from inferlab.verify.checks import TEXT_PROBES, default_probes
from support.campaign import write_campaign
from support.cli import Cli
from support.simproc import SimFactory

SIM = get_engine("sim")


def test_the_reference_engine_passes_its_default_probe(sim_server: SimFactory) -> None:
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1")
    rep = verify_endpoint(sim.url, model="inferlab-sim", engine=SIM, section=VerifySection())
    probes = [c for c in rep.checks if c.kind == "probe"]
    assert len(probes) == 1 and probes[0].passed, probes[0].message
    assert rep.passed
    assert "Say anything." in probes[0].message  # not a question it seems to answer


def test_every_engine_that_serves_a_model_is_held_to_paris() -> None:
    (paris,) = DEFAULT_PROBES
    for name in registered():
        engine = get_engine(name)
        got = default_probes(engine)
        assert got == (list(TEXT_PROBES) if name == "sim" else [paris]), name
    assert re.search(paris.expect, "The capital of France is Paris.")
    # what the reference engine answered the question (a random model's words fail it too)
    assert not re.search(paris.expect, "pulo kivi didu bezu bari rife kuta puro bote muta")


def test_probes_given_are_kept_and_an_empty_list_means_none(sim_server: SimFactory) -> None:
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1")
    rep = verify_endpoint(
        sim.url, model="inferlab-sim", engine=SIM, section=VerifySection(probes=[])
    )
    assert not [c for c in rep.checks if c.kind == "probe"]
    paris = VerifySection(probes=list(DEFAULT_PROBES))
    rep = verify_endpoint(sim.url, model="inferlab-sim", engine=SIM, section=paris)
    assert not rep.passed  # written out, the real-answer probe still holds the sim to it


def test_a_campaign_with_only_a_lossy_gate_verifies_its_baseline(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        verify={"lossy": {"max_kl": 0.5, "min_top1": 0.5, "prompts": 4, "tokens": 8}},
    )
    assert load_campaign(path).verify.probes is None
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store, clock=ModelClock())
    (out,) = res.outcomes
    assert out.status == "measured", out


def test_cli_verify_default_probe_follows_the_detected_engine(
    cli: Cli, sim_server: SimFactory
) -> None:
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1")
    r = cli("verify", "--url", sim.url, "--model", "inferlab-sim")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "Say anything." in r.stdout
    r = cli("verify", "--url", sim.url, "--model", "inferlab-sim", "--engine", "vllm")
    assert r.exit_code == 1 and "paris" in r.stdout.lower()

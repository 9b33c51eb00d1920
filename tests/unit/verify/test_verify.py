"""Verification (``inferlab.verify``, ``inferlab verify``) against the reference engine, served
on a thread of this process (the ``sim_server`` fixture)."""

from __future__ import annotations

from pathlib import Path

from inferlab.config.campaign import Probe, VerifySection
from inferlab.engines import get_engine
from inferlab.verify import verify_endpoint
from support.cli import Cli
from support.simproc import SimFactory

SIM = get_engine("sim")


def test_probes_length_and_stream(sim_server: SimFactory) -> None:
    section = VerifySection(
        probes=[
            Probe(prompt="hi", expect=r"^ \w+"),
            Probe(prompt="Capital of France in one word?", expect="(?i)paris"),
        ],
        length_tokens=9,
    )
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1", "--tokens-per-chunk", "3")
    rep = verify_endpoint(sim.url, model="inferlab-sim", engine=SIM, section=section)
    kinds = {(c.kind, c.passed) for c in rep.checks}
    assert ("length", True) in kinds and ("stream", True) in kinds
    probes = [c for c in rep.checks if c.kind == "probe"]
    assert [p.passed for p in probes] == [True, False]
    assert "does not match '(?i)paris'" in probes[1].message
    assert not rep.passed and not rep.diverged


def test_malformed_stream_fails_the_stream_check(sim_server: SimFactory) -> None:
    section = VerifySection(probes=[])
    sim = sim_server(
        "--ttft-ms", "1", "--itl-ms", "1", "--fault", "malformed", "--fault-after", "2"
    )
    rep = verify_endpoint(sim.url, model="inferlab-sim", engine=SIM, section=section)
    stream = next(c for c in rep.checks if c.kind == "stream")
    assert not stream.passed and "malformed" in stream.message


def test_greedy_equivalence(sim_server: SimFactory) -> None:
    section = VerifySection(
        probes=[], equivalent_to="base", equivalence_prompts=4, equivalence_tokens=12
    )
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1")
    ref = verify_endpoint(sim.url, model="inferlab-sim", engine=SIM, section=section)
    assert ref.outputs is not None and len(ref.outputs.outputs) == 4
    sim = sim_server("--ttft-ms", "3", "--itl-ms", "2", "--tokens-per-chunk", "2")
    same = verify_endpoint(
        sim.url, model="inferlab-sim", engine=SIM, section=section, reference=ref.outputs
    )
    eq = next(c for c in same.checks if c.kind == "equivalence")
    assert eq.passed and eq.detail["match_rate"] == 1.0  # timing changed, tokens did not
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1", "--seed", "5")
    other = verify_endpoint(
        sim.url, model="inferlab-sim", engine=SIM, section=section, reference=ref.outputs
    )
    eq = next(c for c in other.checks if c.kind == "equivalence")
    assert not eq.passed and other.diverged and "first divergence" in eq.message
    assert eq.detail["prompts"][0]["first_divergence_char"] is not None


def test_cli_save_and_against(sim_server: SimFactory, cli: Cli, tmp_path: Path) -> None:
    db = str(tmp_path / "v.db")
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1")
    saved = cli(
        "verify",
        "--url",
        sim.url,
        "--model",
        "inferlab-sim",
        "--engine",
        "sim",
        "--no-default-probes",
        "--probe",
        r"hello::\w",
        "--save-as",
        "base",
        "--db",
        db,
    )
    assert saved.exit_code == 0, saved.stdout + saved.stderr
    again = cli(
        "verify",
        "--url",
        sim.url,
        "--model",
        "inferlab-sim",
        "--engine",
        "sim",
        "--no-default-probes",
        "--against",
        "base",
        "--db",
        db,
    )
    assert again.exit_code == 0 and "match 8/8 (100%)" in again.stdout
    paris = cli(
        "verify", "--url", sim.url, "--model", "inferlab-sim", "--probe", "France?::(?i)paris"
    )
    assert paris.exit_code == 1 and "FAILED probe" in paris.stdout  # the sim has no answer
    none = cli(
        "verify", "--url", sim.url, "--model", "inferlab-sim", "--against", "zzz", "--db", db
    )
    assert none.exit_code == 2 and "no stored greedy outputs for config 'zzz'" in none.stderr
    bad = cli("verify", "--url", sim.url, "--model", "m", "--probe", "no separator")
    assert bad.exit_code == 2 and "--probe" in bad.stderr

"""``recon`` against the reference engine as a real subprocess: the server probe, what is
stored and what the report shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab.recon.server import probe_server
from inferlab.store import Store
from support.cli import Cli, CliResult
from support.simproc import start_sim

# -- bad input -------------------------------------------------------------------------------


def _one_red_line(p: CliResult, *needles: str) -> None:
    assert p.exit_code == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert p.stderr.startswith("error: "), p.stderr
    for n in needles:
        assert n in p.stderr, p.stderr


def test_server_probe_against_the_reference_engine() -> None:
    with start_sim() as sim:
        probe = probe_server(sim.url)
    by = {e.path: e for e in probe.endpoints}
    assert by["/v1/models"].status == 200 and by["/v1/models"].summary["models"]
    assert by["/version"].status == 200
    assert by["/metrics"].status == 200 and by["/metrics"].summary["series"] > 0
    info = by["/get_server_info"]  # the reference engine answers it, as SGLang does
    assert info.status == 200 and info.summary["fields"] > 20, info
    assert all(e.ms is not None and e.ms >= 0 for e in probe.endpoints)
    dead = probe_server(sim.url, timeout_s=2)  # the server is gone now
    assert dead.endpoints[0].status is None and "refused" in str(dead.endpoints[0].error).lower()
    assert all(str(e.error).startswith("not tried") for e in dead.endpoints[1:])


# -- store and report ------------------------------------------------------------------------


def _stored(db: Path, campaign: str) -> list[dict[str, Any]]:
    with Store(db) as store:
        return store.analyses("recon", campaign=campaign)


def test_stored_and_reported(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with start_sim() as sim:
        p = cli(
            "recon",
            "--url",
            sim.url,
            "--campaign",
            "c1",
            "--db",
            str(db),
            env={"NCCL_ALGO": "Ring<script>"},
        )
    assert p.exit_code == 0, p.stderr
    assert "stored as analysis" in p.stderr
    (row,) = _stored(db, "c1")
    assert row["data"]["recon_version"] == 1
    assert row["data"]["env"]["nccl"]["NCCL_ALGO"] == "Ring<script>"
    assert row["name"] == row["data"]["host"]
    assert [e["path"] for e in row["data"]["server"]["endpoints"]][0] == "/v1/models"
    out = tmp_path / "out"
    rep = cli("report", "c1", "--db", str(db), "--out", str(out))
    assert rep.exit_code == 0, rep.stderr
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "## Environment recon" in md and f"### Recon of {row['name']}" in md
    assert "| nccl | NCCL_ALGO | Ring&lt;script&gt; |" in md
    assert "/v1/models" in md and "NCCL, CUDA and engine variables in effect" in md
    assert '<h2 id="recon">Environment recon</h2>' in html
    assert "Ring&lt;script&gt;" in html and "Ring<script>" not in html
    _one_red_line(cli("recon", "--db", str(db)), "--db", "--campaign")

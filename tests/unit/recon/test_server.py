"""A running server probed over HTTP (``recon.server``): the reference engine on a thread of
this process, each endpoint's answer, and a refused connection once it has stopped."""

from __future__ import annotations

from inferlab.recon.server import probe_server
from support.simproc import start_sim_thread


def test_server_probe_against_the_reference_engine() -> None:
    with start_sim_thread() as sim:
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

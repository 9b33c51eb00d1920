"""The reference engine's profile endpoints as a real subprocess serves them: SGLang's
endpoints and file names; a fixed-timing engine cannot profile."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from inferlab.profile import analyze, read_trace
from support.simproc import start_sim


def test_sglang_endpoints_and_file_names(tmp_path: Path) -> None:
    env = {"SGLANG_TORCH_PROFILER_DIR": str(tmp_path / "default")}
    args = ("--preset", "dsv4-flash-8gpu", "--time-scale", "0.01", "--tp-size", "2")
    with start_sim(*args, env=env) as sim:
        assert sim.request("POST", "/stop_profile")[0] == 400  # nothing to stop
        assert sim.request("POST", "/start_profile", {"num_steps": 0})[0] == 400
        st, body = sim.request("POST", "/start_profile", {"num_steps": 5, "profile_prefix": "p"})
        assert st == 200 and b"SIMULATED" in body
        st, body = sim.request("POST", "/start_profile", {})
        assert st == 400 and b"already in progress" in body

        def load() -> None:
            for _ in range(3):
                sim.request("POST", "/v1/completions", {"prompt": "a b c", "max_tokens": 20})

        t = threading.Thread(target=load)
        t.start()
        deadline = time.monotonic() + 20
        while len(list((tmp_path / "default").glob("p-*-TP-*.trace.json.gz"))) < 2:
            assert time.monotonic() < deadline, sim.stderr()
            time.sleep(0.1)
        t.join()
        # without num_steps: /stop_profile answers once the files are written
        out = tmp_path / "manual"
        assert sim.request("POST", "/start_profile", {"output_dir": str(out)})[0] == 200
        load()
        assert sim.request("POST", "/stop_profile")[0] == 200
        names = sorted(x.name for x in out.iterdir())
        assert len(names) == 2 and names[0].endswith("-TP-0.trace.json.gz")
        assert "Profiling done. Traces are saved to" in sim.stderr()
    files = sorted((tmp_path / "default").iterdir())
    assert [f.name.rsplit("-TP-", 1)[1] for f in files] == ["0.trace.json.gz", "1.trace.json.gz"]
    p = analyze(read_trace(files[1]), segment="all")
    assert p.meta["inferlab"]["rank"] == 1 and p.meta["inferlab"]["ranks"] == 2
    assert json.loads(json.dumps(p.to_dict()))["meta"]["inferlab"]["simulated"] is True


def test_fixed_timing_mode_cannot_profile() -> None:
    with start_sim("--ttft-ms", "1", "--itl-ms", "1") as sim:
        st, body = sim.request("POST", "/start_profile", {"num_steps": 3})
    assert st == 400 and b"--preset" in body

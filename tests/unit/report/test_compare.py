"""``inferlab compare`` on a real store filled by real sweeps against the reference engine."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from inferlab.campaign.parts.bench import bench_with_record
from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.errors import ConfigError, NotComparable
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import render_csv, render_md, to_json
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.metrics import summarize
from inferlab.store import Store
from inferlab.store.export import FORMAT_VERSION
from support.cli import Cli
from support.records import rec
from support.simproc import start_sim_thread


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign 'ab': base (ITL 6 ms, launched twice), same (ITL 6 ms again), fast (ITL 4 ms), each with the
    engine's seeded jitter of 0.3 ms, C=1,4, two trials, read on the engine's model clock (so
    the verdicts are the timing model's, not the machine's); campaign 'other': a different
    output length."""
    tmp = tmp_path_factory.mktemp("cmp")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = tmp / "cmp.db"

    port = _free_port()  # base's two launches at one URL: one config, launched twice

    def sweep(itl: str, name: str, campaign: str = "ab", out_tokens: int = 16) -> None:
        at = ("--port", str(port)) if name == "base" else ()
        with start_sim_thread("--ttft-ms", "8", "--itl-ms", itl, "--jitter-ms", "0.3", *at) as sim:
            cfg = BenchConfig(
                url=sim.url,
                engine="sim",
                concurrency=[1, 4],
                requests=32,  # 8 waves at C=4: fewer carry no claim (stats.trust.too_short)
                trials=2,
                tokenizer=tok,
                workload=WorkloadSpec(input_tokens=8, output_tokens=out_tokens),
            )
            bench_with_record(cfg, db=path, campaign=campaign, config=name, clock=ModelClock())

    sweep("6", "base")
    sweep("6", "base")  # launched twice: one launch each with no spread is "undecided"
    sweep("6", "same")
    sweep("4", "fast")
    sweep("6", "longer", campaign="other", out_tokens=24)
    return path


def test_verdicts_direction_and_noise(db: Path) -> None:
    with Store(db) as store:
        c = build_comparison(store, campaign="ab", baseline="base")
    assert c.configs == ["base", "same", "fast"] and c.labels == ["C=1", "C=4"]
    for lb in c.labels:
        fast = c.cells[("fast", lb)]
        assert fast.trials == 2
        assert fast.verdicts["tpot_ms"].claim == "better"
        # 15 gaps of 4 vs 6 ms (+ the same seeded draws of jitter): TPOT ratio 4/6
        assert fast.verdicts["tpot_ms"].ratio.estimate == pytest.approx(4 / 6, rel=0.01)
        assert fast.verdicts["output_tok_s"].claim == "better"
        # each user's requests back to back on the model clock: 8 + 15 × 6 vs 8 + 15 × 4 ms
        assert fast.verdicts["output_tok_s"].ratio.estimate == pytest.approx(98 / 68, rel=0.01)
        same = c.cells[("same", lb)]
        # the same schedule and the same seeded draws: on the model clock, exactly the same
        for metric in ("tpot_ms", "ttft_ms"):
            assert same.verdicts[metric].claim == "~"
            assert same.verdicts[metric].ratio.estimate == 1.0, metric
        assert fast.verdicts["ttft_ms"].ratio.estimate == 1.0
        assert "base" not in [k for k, v in c.cells[("base", lb)].verdicts.items()]
    assert set(c.saturation) == {"base", "same", "fast"}
    md = "\n".join(render_md(c))
    assert "~ within noise" in md and "better" in md and "### Why each verdict" in md
    doc = to_json(c)
    assert doc["baseline"] == "base" and len(doc["cells"]) == 6
    assert render_csv(c).splitlines()[0].startswith("config,load,trials,metric")


def test_not_comparable_is_refused_unless_forced(db: Path) -> None:
    with Store(db) as store:
        with pytest.raises(NotComparable, match=r"longer vs base: workload_hash"):
            build_comparison(store, selectors=["base", "longer"], baseline="base")
        c = build_comparison(store, selectors=["base", "longer"], baseline="base", force=True)
    assert c.forced
    assert all(c.cells[("longer", lb)].forced for lb in c.labels)
    assert "Not comparable (forced; cells marked !)" in "\n".join(render_md(c))


def test_bad_selections(db: Path) -> None:
    with Store(db) as store:
        with pytest.raises(ConfigError, match="no config 'nope'.*known: base"):
            build_comparison(store, campaign="ab", selectors=["nope"])
        with pytest.raises(ConfigError, match="--baseline"):
            build_comparison(store, campaign="ab", baseline="zzz")
        with pytest.raises(ConfigError, match="--metric"):
            build_comparison(store, campaign="ab", metrics=["latency"])
        with pytest.raises(ConfigError, match="no run 99999"):
            build_comparison(store, selectors=["99999"])


def test_cli_formats_and_errors(cli: Cli, db: Path, tmp_path: Path) -> None:
    p = cli("compare", "--db", str(db), "--campaign", "ab", "--baseline", "base")
    assert p.exit_code == 0, p.stderr
    assert "median TPOT" in p.stdout and "better" in p.stdout
    j = cli("compare", "--db", str(db), "--campaign", "ab", "--format", "json")
    doc = json.loads(j.stdout)
    assert doc["baseline"] == "base"
    assert list(doc)[0] == "format_version" and doc["format_version"] == FORMAT_VERSION == 1
    refused = cli("compare", "--db", str(db), "base", "longer")
    assert refused.exit_code == 2 and "workload_hash" in refused.stderr
    assert "Traceback" not in refused.stderr
    missing = cli("compare", "--db", str(tmp_path / "none.db"), "--campaign", "x")
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    listed = cli("runs", "--db", str(db), "--campaign", "ab")
    assert listed.exit_code == 0 and listed.stdout.count("inferlab bench") == 16


# --- configs measured on different GPU models are not compared unless forced


def test_configs_that_ran_on_different_gpu_models_are_refused_without_force(
    tmp_path: Path,
) -> None:
    from inferlab.errors import NotComparable
    from inferlab.report.compare import build_comparison

    base = {"host": "vm", "ray_node_id": "a" * 40, "gpu_count": 1, "cuda_visible_devices": "0"}
    with Store(tmp_path / "g.db") as st:
        with st.transaction():
            cid = st.campaign_id("c")
            for name, gpu, node in (("base", "NVIDIA H200", "a"), ("other", "NVIDIA H100", "b")):
                gid = st.config_id(cid, name, engine="sim", model="m")
                eid = st.runs.environment_id({**base, "gpu_name": gpu, "ray_node_id": node * 40})
                for trial in range(2):
                    recs = [rec(i, 10**9 * (i + 1)) for i in range(4)]
                    st.runs.add(
                        campaign_id=cid, config_id=gid, environment_id=eid,
                        source="inferlab bench", definitions="inferlab/1", metrics_version=1,
                        label="C=1", concurrency=1, rate=None, trial=trial, model="m",
                        workload={"kind": "random"}, records=recs,
                        summary=summarize(recs).to_json(),
                    )  # fmt: skip
        with pytest.raises(NotComparable, match=r"gpu_name \('NVIDIA H200' vs 'NVIDIA H100'\)"):
            build_comparison(st, campaign="c", baseline="base")
        forced = build_comparison(st, campaign="c", baseline="base", force=True)
        assert forced.cells[("other", "C=1")].forced

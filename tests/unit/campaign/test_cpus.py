"""The CPU split of a campaign (``campaign.parts.cpus``): the policy, the campaign file's settings
and their errors, off and remote servers, the plan's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.parts.cpus import plan_cpus
from inferlab.campaign.parts.plan import make_plan, render_plan
from inferlab.config.campaign import load_campaign
from inferlab.cpus import host_cpus
from inferlab.errors import ConfigError

CAMPAIGN = """
[campaign]
name = "c"

[engine]
kind = "{kind}"
host = "{host}"
{engine}

[[config]]
name = "a"

[load]
concurrency = [1, {c}]
requests = 4
{load}
"""


def camp(tmp: Path, kind: str = "vllm", host: str = "local", c: int = 8, **kw: str) -> Path:
    p = tmp / "c.toml"
    engine = "\n".join(f"{k} = {v!r}" for k, v in kw.items() if k in ("cpus", "url", "model"))
    load = "\n".join(f"{k} = {v!r}" for k, v in kw.items() if k == "client_cpus")
    p.write_text(CAMPAIGN.format(kind=kind, host=host, c=c, engine=engine, load=load))
    return p


def test_auto_split_gives_the_client_one_cpu_per_16_streams_up_to_a_quarter(tmp_path: Path) -> None:
    c = load_campaign(camp(tmp_path, c=8, model="m"))
    split = plan_cpus(c, 8, host=(0, 1))
    assert (split.server, split.client, split.source) == ((0,), (1,), "auto")
    assert split.server_env == {
        "VLLM_CPU_OMP_THREADS_BIND": "0",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
    }
    big = plan_cpus(c, 600, host=tuple(range(8)))
    assert big.server == (0, 1, 2, 3, 4, 5) and big.client == (6, 7)  # a quarter of 8
    assert big.server_env["VLLM_CPU_OMP_THREADS_BIND"] == "0-4"  # the last one for the frontend
    gpu = plan_cpus(c, 128, host=tuple(range(16)))  # the H200 host: 16 CPUs, C=128
    assert gpu.client == (12, 13, 14, 15) and gpu.server == tuple(range(12))
    assert plan_cpus(c, 8, host=tuple(range(16))).client == (15,)
    assert plan_cpus(c, 17, host=tuple(range(16))).client == (14, 15)
    sim = plan_cpus(load_campaign(camp(tmp_path, kind="sim")), 8, host=(0, 1, 2, 3))
    assert sim.server_env == {"OMP_NUM_THREADS": "3"}
    assert plan_cpus(c, 8, host=(0,)).server is None  # one CPU: nothing to split


def test_split_from_the_campaign_file_and_its_errors(tmp_path: Path) -> None:
    host = (0, 1, 2, 3, 4, 5, 6, 7)
    p = camp(tmp_path, model="m", cpus="0-5", client_cpus="6,7")
    split = plan_cpus(load_campaign(p), 8, path=p, text=p.read_text(), host=host)
    assert (split.server, split.client, split.source) == (
        (0, 1, 2, 3, 4, 5),
        (6, 7),
        "campaign file",
    )
    p = camp(tmp_path, model="m", cpus="0-5", client_cpus="5,6")
    with pytest.raises(
        ConfigError, match=r"c.toml:\d+: engine.cpus and load.client_cpus overlap \(CPU 5\)"
    ):
        plan_cpus(load_campaign(p), 8, path=p, text=p.read_text(), host=host)
    p = camp(tmp_path, model="m", cpus="0-9")
    with pytest.raises(
        ConfigError, match=r"c.toml:9: engine.cpus: CPU 8-9 is not on this host \(it has 0-7\)"
    ):
        plan_cpus(load_campaign(p), 8, path=p, text=p.read_text(), host=host)
    p = camp(tmp_path, model="m", cpus="0-7")
    with pytest.raises(ConfigError, match="takes every CPU"):
        plan_cpus(load_campaign(p), 8, path=p, text=p.read_text(), host=host)
    p = camp(tmp_path, model="m", cpus="0-x")
    with pytest.raises(ConfigError, match=r"c.toml:9: engine.cpus: .*not a CPU list"):
        load_campaign(p)


def test_off_remote_and_not_launched(tmp_path: Path) -> None:
    off = plan_cpus(load_campaign(camp(tmp_path, model="m", cpus="none")), 8, host=(0, 1))
    assert off.server is None and off.client is None and off.source == "off"
    remote = plan_cpus(load_campaign(camp(tmp_path, host="gpu1", model="m")), 8, host=(0, 1))
    assert remote.server is None and "ssh" in remote.note
    assert any("nothing is pinned" in line for line in remote.lines())
    api = load_campaign(camp(tmp_path, kind="openai", url="http://x", client_cpus="1"))
    split = plan_cpus(api, 8, host=(0, 1))
    assert split.server is None and split.client == (1,)


def test_the_plan_prints_the_split(tmp_path: Path) -> None:
    p = camp(tmp_path, kind="sim")
    text = "\n".join(render_plan(make_plan(p)))
    if len(host_cpus()) >= 2:
        assert "CPU split (auto): server " in text and "OMP_NUM_THREADS=" in text
    else:
        assert "CPU split: none" in text

"""Resolving a campaign's configs (``campaign.parts.resolve``): ``lossless`` inherited and restated,
resolution errors name the file and line, the design's campaign resolves to its story."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.config.campaign import load_campaign
from inferlab.config.hosts import is_local_host
from inferlab.errors import ConfigError
from support.campaign import write_campaign
from support.campaigns import LOSSY


def _write(tmp: Path) -> Path:
    return write_campaign(tmp / "c.toml", **LOSSY)


def test_lossless_is_inherited_and_can_be_restated(tmp_path: Path) -> None:
    p = _write(tmp_path)
    by = {c.name: c for c in resolve_configs(load_campaign(p))}
    assert [by[n].lossless for n in by] == [True, False, False, True]


def test_another_checkpoint_is_inherited_along_extends(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "vllm"\nmodel = "/m/bf16"\n'
        '[[config]]\nname = "base"\n'
        '[[config]]\nname = "fp8"\nextends = "base"\nmodel = "/m/fp8"\nlossless = false\n'
        '[[config]]\nname = "fp8-mns4"\nextends = "fp8"\nset = { "--max-num-seqs" = 4 }\n'
    )
    by = {c.name: c for c in resolve_configs(load_campaign(p), p, p.read_text())}
    assert [by[n].model for n in ("base", "fp8", "fp8-mns4")] == ["/m/bf16", "/m/fp8", "/m/fp8"]
    p.write_text(p.read_text().replace('model = "/m/fp8"', 'model = ""'))
    with pytest.raises(ConfigError, match=r"config\.1\.model"):
        load_campaign(p)


def test_verify_references_must_name_a_config(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    head = '[campaign]\nname = "x"\n[engine]\nkind = "sim"\n[[config]]\nname = "base"\n'
    for key in ("equivalent_to", "lossy_against"):
        p.write_text(head + f'[verify]\n{key} = "bsae"\n')
        with pytest.raises(ConfigError, match=rf"c.toml:8: verify.{key}: unknown config 'bsae' "
                           r"\(known: base\)"):  # fmt: skip
            resolve_configs(load_campaign(p), p, p.read_text())


# --- resolving a campaign's configs: errors name the file and line; the design's story


def test_resolution_errors_name_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "sglang"\nmodel = "m"\n'
        '[[config]]\nname = "a"\nextends = "a"\n'
    )
    c = load_campaign(p)
    with pytest.raises(ConfigError, match=r"c.toml:8: config.extends: config 'a' extends itself"):
        resolve_configs(c, p, p.read_text())
    p.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "sglang"\nmodel = "m"\n'
        '[[config]]\nname = "a"\nextends = "b"\n[[config]]\nname = "b"\nextends = "a"\n'
    )
    with pytest.raises(ConfigError, match=r"a cycle: a → b → a"):
        resolve_configs(load_campaign(p), p, p.read_text())
    p.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "sglang"\nmodel = "m"\n'
        '[[config]]\nname = "a"\nextends = "zz"\n'
    )
    with pytest.raises(ConfigError, match=r"extends unknown config 'zz' \(known: a\)"):
        resolve_configs(load_campaign(p), p, p.read_text())
    p.write_text('[campaign]\nname = "x"\n[engine]\nkind = "tgi"\n[[config]]\nname = "a"\n')
    with pytest.raises(ConfigError, match="unknown kind 'tgi'; expected one of"):
        resolve_configs(load_campaign(p), p, p.read_text())
    p.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "vllm"\n\n[[config]]\nname = "a"\nsett = {}\n'
    )
    with pytest.raises(ConfigError, match=r"c.toml:8: config.0.sett: unknown field"):
        load_campaign(p)


def test_design_campaign_resolves_to_the_story(tmp_path: Path) -> None:
    p = tmp_path / "dsv4.toml"
    p.write_text(
        '[campaign]\nname = "dsv4-mtp"\n[engine]\nkind = "sglang"\n'
        'model = "/models/DeepSeek-V4-Flash"\nargs = ["--tp", "4", "--mem-fraction-static", '
        '"0.70"]\nenv = { NCCL_PROTO = "LL" }\n[[config]]\nname = "baseline"\n[[config]]\n'
        'name = "mtp"\nextends = "baseline"\nargs = ["--speculative-algorithm", "EAGLE"]\n'
        'set = { "--mem-fraction-static" = "0.60", "--cuda-graph-max-bs" = "16" }\n'
    )
    base, mtp = resolve_configs(load_campaign(p), p, p.read_text())
    assert mtp.env == {"NCCL_PROTO": "LL"} and mtp.chain == ["baseline", "mtp"]
    assert "0.60" in mtp.args and "0.70" not in mtp.args and "0.70" in base.args


@pytest.mark.parametrize(
    ("host", "local"),
    [("local", True), ("localhost", True), ("", True), ("me@gpu-1", False), ("gpu-1", False)],
)
def test_is_local(tmp_path: Path, host: str, local: bool) -> None:
    """``engine.host``: local, localhost or empty is this machine; anything else is ssh."""
    p = write_campaign(tmp_path / "c.toml", engine={"host": host})
    (cfg,) = resolve_configs(load_campaign(p))
    assert cfg.is_local is local is is_local_host(host)

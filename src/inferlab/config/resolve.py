"""Resolve a campaign's configs: ``extends`` chains, ``args``, ``set``/``unset``, ``env``.

Errors name the campaign file, the line and the field (a config that extends itself, an unknown
name, a cycle, a flag to unset that is not there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inferlab.config.campaign import CampaignFile, ConfigSpec, locate
from inferlab.engines import get_engine
from inferlab.errors import ConfigError

__all__ = ["ResolvedConfig", "resolve_configs"]


@dataclass(frozen=True)
class ResolvedConfig:
    """One config with everything inherited applied: what will be launched."""

    name: str
    engine: str
    model: str | None
    args: list[str]  # the engine args after every set/unset (the launcher adds model/host/port)
    env: dict[str, str]
    chain: list[str]  # root ancestor first, this config last
    host: str = "local"
    port: int | None = None
    url: str | None = None
    python: str | None = None
    launcher: str | None = None
    ready_timeout_s: float = 900.0
    stop_grace_s: float = 20.0
    description: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    #: greedy equivalence gates verification (the last ``lossless`` set along ``extends``)
    lossless: bool = True
    gpus: int | None = None  # [engine] gpus; None: from the engine's parallel flags


def _where(path: Path | None, text: str | None, loc: tuple[int | str, ...]) -> str:
    if path is None:
        return "campaign"
    line = locate(text or "", loc) if text else None
    return f"{path}:{line}" if line else str(path)


def _chain(camp: CampaignFile, i: int, path: Path | None, text: str | None) -> list[ConfigSpec]:
    by_name = {c.name: c for c in camp.config}
    cur = camp.config[i]
    seen = [cur.name]
    out = [cur]
    while cur.extends is not None:
        j = next(k for k, c in enumerate(camp.config) if c.name == cur.name)
        where = _where(path, text, ("config", j, "extends"))
        if cur.extends == cur.name:
            raise ConfigError(f"{where}: config.extends: config {cur.name!r} extends itself")
        if cur.extends not in by_name:
            raise ConfigError(
                f"{where}: config.extends: config {cur.name!r} extends unknown config "
                f"{cur.extends!r} (known: {', '.join(by_name)})"
            )
        if cur.extends in seen:
            cycle = " → ".join([*seen, cur.extends])
            raise ConfigError(f"{where}: config.extends: a cycle: {cycle}")
        cur = by_name[cur.extends]
        seen.append(cur.name)
        out.append(cur)
    return list(reversed(out))


def resolve_configs(
    camp: CampaignFile, path: Path | None = None, text: str | None = None
) -> list[ResolvedConfig]:
    """Every config of the campaign, resolved in file order."""
    spec = get_engine(camp.engine.kind)
    eng = camp.engine
    out = []
    for i, cfg in enumerate(camp.config):
        chain = _chain(camp, i, path, text)
        args = list(eng.args)
        env = dict(eng.env)
        for c in chain:
            j = next(k for k, x in enumerate(camp.config) if x.name == c.name)
            args += c.args
            try:
                args = spec.apply(args, set=dict(c.set), unset=list(c.unset))
            except ConfigError as exc:
                raise ConfigError(
                    f"{_where(path, text, ('config', j, 'unset'))}: config {c.name!r}: {exc}"
                ) from None
            env.update(c.env)
        out.append(
            ResolvedConfig(
                name=cfg.name,
                engine=eng.kind,
                model=eng.model,
                args=args,
                env=env,
                chain=[c.name for c in chain],
                host=eng.host,
                port=eng.port,
                url=eng.url,
                python=eng.python,
                launcher=eng.launcher,
                ready_timeout_s=eng.ready_timeout_s,
                stop_grace_s=eng.stop_grace_s,
                description=cfg.description,
                lossless=next(
                    (c.lossless for c in reversed(chain) if c.lossless is not None), True
                ),
                gpus=eng.gpus,
            )
        )
    return out

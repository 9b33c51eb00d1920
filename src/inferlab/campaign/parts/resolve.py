"""Resolve a campaign's configs: ``extends`` chains, ``args``, ``set``/``unset``, ``env``,
``files`` and ``tune`` (a child's entry for a kind replaces its parent's).

Errors name the campaign file, the line and the field (a config that extends itself, an unknown
name, a cycle, a flag to unset that is not there, a ``command`` engine without ``{port}``).
"""

from __future__ import annotations

from pathlib import Path

from inferlab.config.campaign import CampaignFile, ConfigSpec, EngineSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.config.source import locate
from inferlab.engines import get_engine, registered
from inferlab.errors import ConfigError
from inferlab.picks import pick

__all__ = ["resolve_configs"]


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


def _check_engine(eng: EngineSection, path: Path | None, text: str | None) -> None:
    """``argv``/``api`` belong to kind ``command``, which needs them (and ``{port}`` when
    inferlab picks the port)."""
    spec = get_engine(eng.kind)
    if not spec.argv_from_config:
        for name in ("argv", "api"):
            if getattr(eng, name):
                where = _where(path, text, ("engine", name))
                raise ConfigError(f"{where}: engine.{name}: only for kind 'command'")
        return
    if not eng.argv:
        where = _where(path, text, ("engine", "kind"))
        raise ConfigError(f"{where}: engine.argv: kind {eng.kind!r} needs the command line")
    if not eng.port and not any("{port}" in tok for tok in eng.argv):
        where = _where(path, text, ("engine", "argv"))
        raise ConfigError(
            f"{where}: engine.argv: no {{port}} placeholder, and inferlab picks the port "
            "(engine.port is not set): put {port} where the server takes its port, or set "
            "engine.port to the one the command uses"
        )
    apis = [n for n in registered() if not get_engine(n).argv_from_config]
    if eng.api is not None and eng.api not in apis:
        where = _where(path, text, ("engine", "api"))
        raise ConfigError(f"{where}: engine.api: {eng.api!r}; expected one of {', '.join(apis)}")


def _levers(
    chain: list[ConfigSpec], base: Path, where: list[str]
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """``files``, ``tune`` and the tune owners along the chain (paths made absolute)."""
    files: dict[str, str] = {}
    tune: dict[str, str] = {}
    owner: dict[str, str] = {}
    for c, loc in zip(chain, where):
        both = sorted(set(c.files) & set(c.tune))
        if both:
            raise ConfigError(
                f"{loc}: config {c.name!r}: {both[0]} is given both as files and as tune; keep one"
            )
        for kind, d in c.files.items():
            files[kind] = str((base / Path(d).expanduser()).resolve())
            tune.pop(kind, None)
            owner.pop(kind, None)
        for kind, how in c.tune.items():
            tune[kind] = (
                how if how == "from-log" else str((base / Path(how).expanduser()).resolve())
            )
            owner[kind] = c.name
            files.pop(kind, None)
    return files, tune, owner


def _check_references(camp: CampaignFile, path: Path | None, text: str | None) -> None:
    """``[verify] equivalent_to`` and ``lossy_against`` name configs of the campaign."""
    names = [c.name for c in camp.config]
    for key in ("equivalent_to", "lossy_against"):
        ref = getattr(camp.verify, key)
        if ref is not None and ref not in names:
            raise ConfigError(
                f"{_where(path, text, ('verify', key))}: verify.{key}: unknown config {ref!r} "
                f"(known: {', '.join(names)})"
            )


def resolve_configs(
    camp: CampaignFile, path: Path | None = None, text: str | None = None
) -> list[ResolvedConfig]:
    """Every config of the campaign, resolved in file order."""
    spec = get_engine(camp.engine.kind)
    eng = camp.engine
    _check_engine(eng, path, text)
    _check_references(camp, path, text)
    base = path.parent if path is not None else Path.cwd()
    out = []
    for i, cfg in enumerate(camp.config):
        chain = _chain(camp, i, path, text)
        args = list(eng.args)
        env = dict(eng.env)
        where = []
        for c in chain:
            j = next(k for k, x in enumerate(camp.config) if x.name == c.name)
            where.append(_where(path, text, ("config", j, "files" if c.files else "tune")))
            args += c.args
            try:
                args = spec.apply(args, set=dict(c.set), unset=list(c.unset))
            except ConfigError as exc:
                raise ConfigError(
                    f"{_where(path, text, ('config', j, 'unset'))}: config {c.name!r}: {exc}"
                ) from None
            env.update(c.env)
        files, tune, owner = _levers(chain, base, where)
        out.append(
            ResolvedConfig(
                name=cfg.name,
                engine=eng.kind,
                model=next((c.model for c in reversed(chain) if c.model), eng.model),
                args=args,
                env=env,
                chain=[c.name for c in chain],
                **pick(eng, "host", "port", "url", "python", "launcher"),
                **pick(eng, "ready_timeout_s", "stop_grace_s", "gpus"),
                description=cfg.description,
                files=files,
                tune=tune,
                tune_owner=owner,
                command=list(eng.argv),
                health_path=eng.health,
                metrics_path=eng.metrics,
                api=eng.api or ("openai" if spec.argv_from_config else None),
                lossless=next(
                    (c.lossless for c in reversed(chain) if c.lossless is not None), True
                ),
                lossy=next((c.lossy for c in reversed(chain) if c.lossy is not None), None),
            )
        )
    return out

"""What the plan says beyond argv and env, from what the store remembers of the campaign.

- an engine config directory that differs from the original inferlab recorded before it first
  installed files there (e.g. ``tune fp8-gemm --install-into`` since, or a restore that could
  not finish): the configs without ``files`` run with the directory as it is now, not as the
  engine shipped it;
- the lever evidence stored for each config (a resumed run shows what it already knows).
"""

from __future__ import annotations

from typing import Any, Protocol

from inferlab.campaign.parts.applied import item_lines
from inferlab.campaign.parts.plan import baseline_of
from inferlab.config.resolve import ResolvedConfig
from inferlab.errors import ConfigError
from inferlab.server.files import file_op
from inferlab.store import Store
from inferlab.store.checks import LeverCheck
from inferlab.store.models import FilesManifest

__all__ = ["dir_drift", "plan_notes", "stored_levers"]


class _Plan(Protocol):
    @property
    def configs(self) -> list[ResolvedConfig]: ...

    @property
    def campaign(self) -> Any: ...


def dir_drift(store: Store, campaign: str, cfg: ResolvedConfig) -> list[str]:
    """One line per engine directory that differs from its first recorded original."""
    first: dict[str, FilesManifest] = {}
    for a in store.analyses.of(FilesManifest, "files", campaign):
        if a.data.state == "installed" and a.data.dir not in first:
            first[a.data.dir] = a.data
    out = []
    for path, d in first.items():
        try:
            now = file_op(
                cfg.python or d.python or "python3",
                {"op": "read", "dir": path, "names": []},
                host=cfg.host,
            )["snapshot"]
        except ConfigError as exc:
            out.append(f"engine dir {path}: could not compare with its recorded original ({exc})")
            continue
        before = d.before
        added = sorted(set(now) - set(before))
        gone = sorted(set(before) - set(now))
        changed = sorted(k for k in set(now) & set(before) if now[k] != before[k])
        if added or gone or changed:
            parts = [
                f"{len(x)} {w} ({', '.join(x[:2])}{', ...' if len(x) > 2 else ''})"
                for x, w in ((added, "added"), (changed, "changed"), (gone, "removed"))
                if x
            ]
            out.append(
                f"engine dir {path} differs from the original recorded before config "
                f"{d.config}'s files were installed: {'; '.join(parts)} — configs "
                "without files run with it as it is now, not as the engine shipped it"
            )
    return out


def stored_levers(store: Store, campaign: str, configs: list[ResolvedConfig]) -> list[str]:
    """The newest stored lever evidence of each config, one line per item."""
    out = []
    for c in configs:
        got = store.verifications.latest_of(LeverCheck, campaign, c.name, "lever")
        if got is not None and got.items:
            items = [i.to_json() for i in got.items]
            out += [f"{c.name}: lever (stored) {line}" for line in item_lines(items)]
    return out


def plan_notes(plan: _Plan, store: Store) -> list[str]:
    """The lines the plan adds from the store (see the module docstring)."""
    name = plan.campaign.campaign.name
    drift = dir_drift(store, name, baseline_of(plan.configs))
    return drift + stored_levers(store, name, plan.configs)

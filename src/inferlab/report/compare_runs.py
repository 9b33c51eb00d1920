"""The runs of a comparison: which are selected, their config keys, identities and label order.
They are grouped with their records by ``store.groups.group_runs``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from inferlab.errors import ConfigError
from inferlab.store import RunRow, Store

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["config_keys", "identity", "select_runs"]


def select_runs(store: Store, campaign: str | None, selectors: Sequence[str]) -> list[RunRow]:
    """The runs of ``campaign``, narrowed to run ids / config names; ConfigError naming an
    unknown one."""
    if campaign is None and not selectors:
        raise ConfigError("compare: give --campaign NAME or run ids / config names")
    runs = store.runs(campaign=campaign)
    if not selectors:
        return runs
    out: list[RunRow] = []
    for sel in selectors:
        if sel.isdigit():
            hit = [r for r in store.runs(run_ids=[int(sel)])]
            if not hit:
                raise ConfigError(f"compare: no run {sel} in {store.path}")
        else:
            hit = [r for r in runs if r.config == sel]
            if not hit:
                known = sorted({r.config for r in runs})
                raise ConfigError(
                    f"compare: no config {sel!r} in {store.path}"
                    + (f" (known: {', '.join(known)})" if known else "")
                )
        out.extend(r for r in hit if r not in out)
    return out


def config_keys(runs: Sequence[RunRow]) -> dict[int, str]:
    """Config name, or name@hash when a config changed (results of two hashes never mix)."""
    hashes: dict[str, set[str]] = {}
    for r in runs:
        hashes.setdefault(r.config, set()).add(r.config_hash)
    return {
        r.id: r.config if len(hashes[r.config]) == 1 else f"{r.config}@{r.config_hash[:6]}"
        for r in runs
    }


def identity(r: RunRow) -> dict[str, JsonValue]:
    """The fields ``check_comparable`` compares, from one run."""
    env = r.environment
    return {
        "model": r.model,
        "gpu_name": env.get("gpu_name"),
        "gpu_count": env.get("gpu_count") or None,
        "engine_version": env.get("engine_version"),
        "workload_hash": r.workload_hash,
        "metrics_version": r.metrics_version,
    }

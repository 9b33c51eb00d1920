"""The runs of a comparison, grouped by config and load point, and the samples each metric reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inferlab.errors import ConfigError
from inferlab.store import RunRow, Store
from inferlab.store.groups import RunGroup, measured, per_request, throughput_sample

__all__ = [
    "RunGroup",
    "config_keys",
    "group_runs",
    "identity",
    "measured",
    "per_request",
    "select_runs",
    "throughput_sample",
]


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


def group_runs(
    store: Store, runs: Sequence[RunRow], keys: dict[int, str]
) -> dict[tuple[str, str], RunGroup]:
    """Runs by (config key, load label), each with its request records, in run order."""
    groups: dict[tuple[str, str], RunGroup] = {}
    for r in runs:
        g = groups.setdefault((keys[r.id], r.label), RunGroup([], []))
        g.runs.append(r)
        g.records.append(store.requests(r.id))
    return groups


def identity(r: RunRow) -> dict[str, Any]:
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

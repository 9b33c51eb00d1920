"""Which stored runs were measured in one launch of a server: one pass of a config at a load
point (its first pass, each interleaved pass, its recheck: ``store.interleave``,
``store.recheck``), its trials sharing the server. The launch-to-launch spread is estimated
from the configs launched more than once at a point (``stats.launches``; the campaign's
launches: ``campaign_launches``); profiled runs (a
profiler attached) are not measurements of the launch and are left out."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Sequence

from inferlab.store.db import Store
from inferlab.store.groups import RunGroup, group_runs
from inferlab.store.interleave import INTERLEAVE_TAG
from inferlab.store.rows import RunRow

__all__ = [
    "LAUNCH_TAG",
    "MEASURED",
    "campaign_launches",
    "config_runs",
    "count_launches",
    "launch_cells",
    "launch_groups",
    "launch_key",
    "launch_of",
    "one_launch",
]

#: the purposes of runs that measure a launch (not "profiled")
MEASURED = ("measure", "interleave", "recheck")
#: the environment key holding which launch of its config a run was measured in (2, 3, ...)
LAUNCH_TAG = "launch"


def launch_of(environment: dict[str, object]) -> int:
    """The launch number a run's environment records (1: none recorded, the first)."""
    k = environment.get(LAUNCH_TAG)
    return k if isinstance(k, int) and k >= 1 else 1


def launch_key(r: RunRow) -> Hashable:
    """What a run's launch is told by, besides its order: config, point, pass, launch."""
    tag = r.environment.get(INTERLEAVE_TAG) if r.purpose == "interleave" else None
    k = launch_of(r.environment)
    return (r.config_hash, r.config, r.label, r.purpose, None if tag is None else str(tag), k)


def config_runs(store: Store, campaign: str, config_id: int) -> list[RunRow]:
    """Every run of config row ``config_id`` (its current content; all purposes), oldest first."""
    got = store.db.execute("SELECT name, hash FROM configs WHERE id = ?", (config_id,)).fetchone()
    if got is None:
        return []
    runs = store.runs(campaign=campaign, config=str(got[0]), purpose=None)
    return [r for r in runs if r.config_hash == got[1]]


def launch_cells(store: Store, campaign: str, config_id: int) -> dict[int, set[tuple[str, int]]]:
    """Launch number → the (label, trial) cells of config row ``config_id`` measured to the end
    in that launch (what ``--resume`` skips in each round): not interrupted, not rejected,
    purpose "measure"."""
    rows = store.db.execute(
        "SELECT r.label, r.trial, e.snapshot_json FROM runs r "
        "JOIN campaigns c ON c.id = r.campaign_id "
        "LEFT JOIN environments e ON e.id = r.environment_id "
        "WHERE c.name = ? AND r.config_id = ? AND r.interrupted = 0 AND r.rejected IS NULL "
        "AND r.purpose = 'measure'",
        (campaign, config_id),
    ).fetchall()
    out: dict[int, set[tuple[str, int]]] = {}
    for label, trial, env in rows:
        k = launch_of(json.loads(env) if env else {})
        out.setdefault(k, set()).add((str(label), int(trial)))
    return out


def _launches(runs: Iterable[RunRow]) -> list[list[RunRow]]:
    """``runs`` split into launches, in run order: a run of the same key whose trial the
    current launch already holds starts another (a pass measured again on ``--resume``)."""
    out: list[list[RunRow]] = []
    open_: dict[Hashable, list[RunRow]] = {}
    for r in sorted(runs, key=lambda r: r.id):
        key = launch_key(r)
        cur = open_.get(key)
        if cur is None or any(x.trial == r.trial for x in cur):
            cur = open_[key] = []
            out.append(cur)
        cur.append(r)
    return out


def count_launches(runs: Iterable[RunRow]) -> int:
    """The most launches of one config at any load point among ``runs`` (its measuring runs
    that finished, trusted or not: a launch whose points were untrusted was still spent)."""
    keep = [r for r in runs if r.purpose in MEASURED and not r.interrupted]
    per: dict[tuple[str, str], int] = {}
    for launch in _launches(keep):
        key = (launch[0].config_hash, launch[0].label)
        per[key] = per.get(key, 0) + 1
    return max(per.values(), default=0)


def one_launch(runs: Sequence[RunRow]) -> bool:
    """Whether ``runs`` (one side of an A/B) were all measured in one launch."""
    return bool(runs) and len(_launches(runs)) == 1


def launch_groups(store: Store, runs: Iterable[RunRow]) -> dict[str, list[list[RunGroup]]]:
    """Label → each config's launches there, one ``RunGroup`` a launch, from the finished,
    trusted measuring runs of ``runs``."""
    keep = [r for r in runs if r.purpose in MEASURED and not r.interrupted and r.trust == "trusted"]
    by: dict[tuple[str, str], list[RunGroup]] = {}
    for launch in _launches(keep):
        g = group_runs(store, launch, lambda r: 0)[0]
        by.setdefault((launch[0].label, launch[0].config_hash), []).append(g)
    out: dict[str, list[list[RunGroup]]] = {}
    for (label, _), groups in by.items():
        out.setdefault(label, []).append(groups)
    return out


def campaign_launches(store: Store, campaign: str) -> dict[str, list[list[RunGroup]]]:
    """The campaign's launches so far: label → each config's launches there (``launch_groups``
    of every stored run of the campaign); ``stats.launches.launches_of`` estimates them."""
    return launch_groups(store, store.runs(campaign=campaign, purpose=None))

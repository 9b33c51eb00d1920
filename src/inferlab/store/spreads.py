"""Launch-to-launch spreads kept for reuse: one campaign's measured spread of each metric at
each load point, stored under the engine, model and host it was measured on (analysis kind
``launch_spread``), so that a later comparison on the same engine, model and host starts with
a spread instead of "undecided: one launch each" (``stats.launch_ab``). The host is the
machine's kind (CPU model, GPU count and name), not its hostname: a lent machine of the same
kind is a fresh launch of the same host, which is what the spread measures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inferlab.stats.spread import LaunchSpread, pool_spreads
from inferlab.store.analyses import StoredAnalysis
from inferlab.store.db import Store
from inferlab.store.outcomes import SpreadBody
from inferlab.store.rows import RunRow

__all__ = [
    "KIND",
    "SpreadKey",
    "prior_spread",
    "save_spreads",
    "spread_key",
    "stored_of",
    "stored_spreads",
]

KIND = "launch_spread"


@dataclass(frozen=True)
class SpreadKey:
    """What a spread is reused across: engine (name and version), model, host kind."""

    engine: str
    model: str
    host: str

    def describe(self) -> str:
        """ "vllm 0.26.0, /models/m1b on 16× Intel Xeon … + 1× NVIDIA H200"."""
        return f"{self.engine}, {self.model} on {self.host}"


def spread_key(run: RunRow) -> SpreadKey:
    """The key of the engine, model and host ``run`` was measured on."""
    env = run.environment
    engine = " ".join(str(x) for x in (env.get("engine_name"), env.get("engine_version")) if x)
    gpus = f" + {env.get('gpu_count')}× {env.get('gpu_name')}" if env.get("gpu_name") else ""
    return SpreadKey(engine or run.source, run.model or "?", f"{env.get('cpu') or '?'}{gpus}")


def save_spreads(
    store: Store, campaign: str, key: SpreadKey, spreads: Mapping[tuple[str, str], LaunchSpread]
) -> int:
    """Store ``campaign``'s spreads ((label, metric) → spread) under ``key``; a later save of
    the same campaign supersedes this one (``stored_spreads`` reads the newest). The count."""
    with store.transaction():
        for (label, metric), s in spreads.items():
            body = SpreadBody(
                engine=key.engine,
                model=key.model,
                host=key.host,
                label=label,
                metric=metric,
                tau=s.tau,
                df=s.df,
                launches=s.launches,
                within=s.within,
            )
            store.analyses.add(KIND, f"{label} {metric}", body, campaign=campaign)
    return len(spreads)


def stored_of(store: Store, key: SpreadKey) -> list[StoredAnalysis[SpreadBody]]:
    """Every stored spread measured under ``key``, oldest first."""
    return [
        a
        for a in store.analyses.of(SpreadBody, KIND)
        if (a.data.engine, a.data.model, a.data.host) == (key.engine, key.model, key.host)
    ]


def stored_spreads(
    store: Store, key: SpreadKey, label: str, metric: str, *, other_than: str | None = None
) -> list[LaunchSpread]:
    """The newest stored spread of ``metric`` at ``label`` of each campaign (but
    ``other_than``, whose launches the caller reads itself) measured under ``key``, each
    with its source said."""
    newest: dict[str, tuple[LaunchSpread, str]] = {}
    for a in stored_of(store, key):
        d = a.data
        if d.label != label or d.metric != metric or a.campaign == other_than:
            continue
        src = f"stored: campaign {a.campaign}, {a.created_at[:10]}"
        s = LaunchSpread(d.tau, d.df, d.launches, d.within or 0.0, src)
        newest[str(a.campaign)] = (s, src)
    return [s for s, _ in newest.values()]


def prior_spread(
    store: Store,
    key: SpreadKey,
    label: str,
    metric: str,
    own: LaunchSpread | None,
    *,
    campaign: str,
) -> LaunchSpread | None:
    """The prior a launch-level A/B of ``metric`` at ``label`` is moderated with
    (``stats.launch_ab``): ``own`` (the campaign's other configs launched more than once
    there) pooled with the spreads other campaigns stored under ``key``. One rule for
    ``compare``, the launch rounds and ``optimize``'s confirmation."""
    return pool_spreads(own, *stored_spreads(store, key, label, metric, other_than=campaign))

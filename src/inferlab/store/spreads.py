"""Launch-to-launch spreads kept for reuse: one campaign's measured spread of each metric at
each load point, stored under the engine, model and host it was measured on (analysis kind
``launch_spread``), so that a later comparison on the same engine, model and host starts with
a spread instead of "undecided: one launch each" (``stats.launch_ab``). The host is the
machine's kind (CPU model, GPU count and name), not its hostname: a lent machine of the same
kind is a fresh launch of the same host, which is what the spread measures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from inferlab.picks import pick
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
#: what a ``SpreadBody`` keeps of a ``LaunchSpread`` (its source is where it is stored)
_KEPT = ("tau", "df", "launches", "within")


@dataclass(frozen=True)
class SpreadKey:
    """What a spread is reused across: engine (name and version), model, host kind."""

    engine: str
    model: str
    host: str

    def describe(self) -> str:
        """ "vllm 0.26.0, /models/m1b on 16× Intel Xeon … + 1× NVIDIA H200"."""
        return f"{self.engine}, {self.model} on {self.host}"

    @classmethod
    def of(cls, body: SpreadBody) -> SpreadKey:
        """The key ``body`` was stored under."""
        return cls(**pick(body, *(f.name for f in fields(cls))))


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
            body = SpreadBody(**asdict(key), label=label, metric=metric, **pick(s, *_KEPT))
            store.analyses.add(KIND, f"{label} {metric}", body, campaign=campaign)
    return len(spreads)


def stored_of(store: Store, key: SpreadKey) -> list[StoredAnalysis[SpreadBody]]:
    """Every stored spread measured under ``key``, oldest first."""
    return [a for a in store.analyses.of(SpreadBody, KIND) if SpreadKey.of(a.data) == key]


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

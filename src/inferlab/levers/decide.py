"""``inferlab levers``: every config's levers ranked by what they can buy, the predictions
stored as they are made (with a timestamp), and predicted vs measured."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inferlab.errors import ConfigError
from inferlab.picks import pick
from inferlab.profile.result import finite
from inferlab.store import Store
from inferlab.store.models import StoredPrediction

from . import kernel_rules, load_rules  # noqa: F401  (they register the rules)
from .evidence import ConfigEvidence, Evidence, gather
from .model import Lever, LeverOptions
from .predict import TIME_FORMAT, PredictionRow, predict_rows
from .registry import RULES
from .specdec import check_accept_length

__all__ = [
    "NOTHING_TO_RANK",
    "Decision",
    "decide",
    "rank",
    "record_predictions",
    "stored_predictions",
]

NOTHING_TO_RANK = (
    "nothing to rank: capture a profile (`[profile]`) or store one with "
    "`inferlab profile --campaign`"
)
VERSION = 1


def rank(levers: Sequence[Lever]) -> list[Lever]:
    """By ceiling, largest first; levers without a TPOT ceiling last, in rule order."""
    order = {k: i for i, k in enumerate(RULES)}

    def key(lv: Lever) -> tuple[int, float, int]:
        c = lv.ceiling
        return (c is None, -(c if c is not None else 0.0), order.get(lv.kind, 99))

    return sorted(levers, key=key)


def _levers(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    out: list[Lever] = []
    for r in RULES.values():
        out += r.build(ev, cfg, opts)
    return rank(out)


@dataclass
class Decision:
    """Ranked levers per config (key ``""``: profiles stored without a config), prediction
    rows, and notes on what could not be predicted."""

    campaign: str
    simulated: bool
    baseline: str | None
    levers: dict[str, list[Lever]]
    predictions: list[PredictionRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "campaign", "simulated", "baseline"),
            "levers": {k: [lv.to_dict() for lv in v] for k, v in self.levers.items()},
            "predictions": [finite(r.to_dict()) for r in self.predictions],
            "notes": list(self.notes),
        }


def _check(ev: Evidence, opts: LeverOptions) -> None:
    if opts.config is not None and opts.config not in ev.configs:
        raise ConfigError(
            f"--config: {opts.config!r} is not a config of campaign {ev.campaign!r} "
            f"({', '.join(ev.configs) or 'none'})"
        )
    if opts.draft_tokens is not None and opts.draft_tokens < 1:
        raise ConfigError(f"--draft-tokens: expected k ≥ 1, got {opts.draft_tokens}")
    if opts.draft_cost is not None and not 0.0 <= opts.draft_cost < 1.0:
        raise ConfigError(f"--draft-cost: expected 0 ≤ δ < 1, got {opts.draft_cost:g}")
    if opts.accept_length is not None:
        k = opts.draft_tokens
        if k is None:
            spec = [s for c in ev.configs.values() if (s := load_rules.spec_of(c)) is not None]
            k = next((s.draft_tokens for s in spec if s.draft_tokens is not None), None)
        check_accept_length(opts.accept_length, k)


def decide(
    store: Store,
    campaign: str,
    opts: LeverOptions | None = None,
    *,
    stored: Sequence[StoredPrediction] | None = None,
    check: bool = True,
) -> Decision:
    """Rank the levers of every config (or ``opts.config``) and, with ``check``, the
    predictions against the measurements (``stored``: the stored predictions, default read from
    the store); ``ConfigError`` ("nothing to rank: ...") when the campaign has no profile and
    no sweep."""
    opts = opts or LeverOptions()
    ev = gather(store, campaign)
    _check(ev, opts)
    if not ev.has_anything():
        raise ConfigError(NOTHING_TO_RANK)
    names = [opts.config] if opts.config else list(ev.configs)
    levers = {n: lv for n in names if (lv := _levers(ev, ev.configs[n], opts))}
    if ev.loose_profiles and opts.config is None:
        loose = ConfigEvidence("", None, [], {}, {}, profiles=list(ev.loose_profiles))
        if lv := _levers(ev, loose, opts):
            levers[""] = lv
    left_out = [
        f"{c.name}: {', '.join(c.open_loop)} left out: the lever rules read closed-loop C=N points"
        for c in ev.configs.values()
        if c.open_loop and (opts.config is None or c.name == opts.config)
    ]
    if not check:
        return Decision(campaign, ev.simulated, ev.baseline, levers, notes=left_out)
    rows, notes = predict_rows(
        ev, stored if stored is not None else stored_predictions(store, campaign), opts
    )
    if opts.config:
        rows = [r for r in rows if opts.config in (r.config, r.reference)]
    return Decision(campaign, ev.simulated, ev.baseline, levers, rows, [*left_out, *notes])


def stored_predictions(store: Store, campaign: str) -> list[StoredPrediction]:
    """Every stored prediction of the campaign, oldest first."""
    return store.analyses.predictions(campaign)


def _content(d: Mapping[str, Any]) -> Any:
    pts = [
        {k: (round(v, 6) if isinstance(v, float) else v) for k, v in p.items()}
        for p in d.get("points") or []
    ]
    return (d.get("summary"), pts)


def _config_id(store: Store, campaign: str, name: str) -> int | None:
    found = store.configs.latest(campaign, name)
    return found[0] if found else None


def record_predictions(
    store: Store, campaign: str, opts: LeverOptions | None = None
) -> list[dict[str, Any]]:
    """Store each quantitative lever (an Amdahl ceiling or a speculative-decoding band) whose
    numbers differ from its latest stored prediction, with the time it was made; returns what
    was stored. Nothing is stored when there is nothing to rank."""
    try:
        d = decide(store, campaign, opts, check=False)
    except ConfigError as exc:
        if str(exc) == NOTHING_TO_RANK:
            return []
        raise
    latest = {s.key: s for s in stored_predictions(store, campaign)}
    now = time.strftime(TIME_FORMAT)
    new = []
    for name, levers in d.levers.items():
        for lv in levers:
            if lv.model == "none":
                continue
            data = {**lv.to_dict(), "made_at": now, "version": VERSION}
            old = latest.get(lv.key)
            if old is None or _content(old.model_dump(exclude_unset=True)) != _content(data):
                new.append((name, data))
    if new:
        with store.transaction():
            for name, data in new:
                cid = _config_id(store, campaign, name) if name else None
                store.analyses.add_prediction(data, campaign=campaign, config_id=cid)
    return [data for _, data in new]

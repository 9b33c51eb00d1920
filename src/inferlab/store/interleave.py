"""The baseline's passes read back (``[load] interleave``), and the one nearest a candidate.

With interleave the baseline is measured again just before each candidate after the first
(``campaign.interleave``): its first pass has ``purpose = 'measure'``, each later pass
``purpose = 'interleave'`` with the candidate it was measured for in its environment
(``INTERLEAVE_TAG``); a pass measured again for the same candidate (``--resume`` after an
interrupted candidate) is a pass of its own. A candidate's point is judged against the
baseline's **nearest** pass at that point: the last one measured before it (by run order; the
next one is no nearer, and the last one before is what its sequential A/B was tested
against), else the first one after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inferlab.store.db import Store
from inferlab.store.rows import RunRow

__all__ = ["INTERLEAVE_TAG", "BaselinePass", "baseline_passes", "nearest_pass", "passes_of"]

#: the environment key naming the candidate an interleaved baseline pass was measured for
INTERLEAVE_TAG = "interleave_before"


@dataclass(frozen=True)
class BaselinePass:
    """The runs (trials) of one pass of the baseline at one load point, in run order."""

    runs: tuple[RunRow, ...]

    @property
    def before(self) -> str | None:
        """The candidate this pass was measured for; None: the baseline's first pass."""
        tag = self.runs[0].environment.get(INTERLEAVE_TAG)
        return str(tag) if tag is not None else None

    @property
    def first(self) -> int:
        return self.runs[0].id

    @property
    def last(self) -> int:
        return self.runs[-1].id

    def describe(self) -> str:
        """ "the baseline's first pass (run 3)", "the baseline's pass before A (runs 9–10)"."""
        which = "first pass" if self.before is None else f"pass before {self.before}"
        ids = f"run {self.first}" if self.first == self.last else f"runs {self.first}–{self.last}"
        return f"{self.runs[0].config}'s {which} ({ids})"


def baseline_passes(
    store: Store, campaign: str, baseline: str, config_hash: str | None = None
) -> dict[str, list[BaselinePass]]:
    """Label → the baseline's passes there (first pass, then each interleaved pass), finished
    runs of ``config_hash`` (default: any); empty when the campaign has no interleaved pass."""
    again = [
        r
        for r in store.runs(campaign=campaign, config=baseline, purpose="interleave")
        if not r.interrupted and (config_hash is None or r.config_hash == config_hash)
    ]
    if not again:
        return {}
    first = [
        r
        for r in store.runs(campaign=campaign, config=baseline)
        if not r.interrupted and (config_hash is None or r.config_hash == config_hash)
    ]
    return passes_of([*first, *again])


def passes_of(runs: Iterable[RunRow]) -> dict[str, list[BaselinePass]]:
    """Label → the passes of a baseline's finished runs ``runs`` there, in run order."""
    out: dict[str, list[list[RunRow]]] = {}
    open_: dict[tuple[str, str, str | None], list[RunRow]] = {}  # the pass each key adds to
    for r in sorted(runs, key=lambda r: r.id):
        tag = r.environment.get(INTERLEAVE_TAG) if r.purpose == "interleave" else None
        key = (r.label, r.purpose, None if tag is None else str(tag))
        cur = open_.get(key)
        if cur is None or any(x.trial == r.trial for x in cur):  # a pass measured again
            cur = open_[key] = []
            out.setdefault(r.label, []).append(cur)
        cur.append(r)
    return {
        lb: sorted((BaselinePass(tuple(rs)) for rs in ps), key=lambda p: p.first)
        for lb, ps in out.items()
    }


def nearest_pass(passes: Sequence[BaselinePass], cand: Sequence[RunRow]) -> BaselinePass | None:
    """The pass of ``passes`` (one load point's) nearest the candidate's runs ``cand`` there:
    the last that ended before the candidate's first run, else the first after it."""
    if not passes or not cand:
        return None
    start = min(r.id for r in cand)
    before = [p for p in passes if p.last < start]
    return before[-1] if before else passes[0]

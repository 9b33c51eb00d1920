"""The ``[verify] eval`` step of verification: the harness run against one config, its raw
samples stored (``eval-samples``), and the ``eval`` check against the reference config's
stored samples (docs/verify.md, "lm-eval").

The reference config is scored, not gated (a reference the harness cannot score is recorded and
leaves every other config "cannot gate"); every other config is gated by
:func:`inferlab.verify.scoregap.gap_passes`. "Cannot gate" (the harness failed, the engine did
not answer, no stored reference, no shared document) is a failure, never a pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab.config.campaign import CampaignFile
from inferlab.config.evalgate import EvalGate
from inferlab.config.resolve import ResolvedConfig
from inferlab.store import Store
from inferlab.verify import CheckResult
from inferlab.verify.lmeval import HarnessFailed, HarnessRun, run_harness, sample_scores
from inferlab.verify.scoregap import DocKey, ScoreGap, gap_passes, score_gap

__all__ = ["SAMPLES_KIND", "eval_check", "gap_message", "plan_line"]

#: the verification kind that holds a config's raw harness samples
SAMPLES_KIND = "eval-samples"


def _what(gate: EvalGate) -> str:
    return f"lm-eval {','.join(gate.tasks)}" + (f" (limit {gate.limit})" if gate.limit else "")


def plan_line(gate: EvalGate, *, reference: bool) -> str:
    """What ``--dry-run`` says of a config's eval step."""
    if reference:
        return f"{_what(gate)}: scored once, the reference of the eval gate"
    return (
        f"{_what(gate)} gate: score difference from the reference ≥ -{gate.max_drop:g} "
        f"(low end of the {gate.level:.0%} paired bootstrap, docs/verify.md)"
    )


def gap_message(gap: ScoreGap, gate: EvalGate, metric: str) -> str:
    """One line with the figures: both scores, the difference and its interval, the verdict."""
    d, ok = gap.diff, gap_passes(gap, gate.max_drop)
    return (
        f"{_what(gate)} {metric}: config {gap.config.estimate:.3f} vs reference "
        f"{gap.reference.estimate:.3f}; difference {d.estimate:+.3f} ({d.level:.0%} paired "
        f"bootstrap [{d.low:+.3f}, {d.high:+.3f}]) {'≥' if ok else '<'} -{gate.max_drop:g}; "
        f"{gap.docs} documents, {gap.changed} scored differently"
    )


def _metric_name(run: HarnessRun, gate: EvalGate) -> str:
    if gate.metric is not None:
        return gate.metric
    firsts = {str(s[0]["metrics"][0]) for s in run.samples.values() if s}
    return "/".join(sorted(firsts))


def eval_check(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    url: str,
    model: str,
    store: Store,
    reference_config: str,
) -> tuple[CheckResult, dict[str, Any] | None]:
    """The ``eval`` check of ``cfg`` and its raw harness record to store (None: no run)."""
    gate = camp.verify.eval
    assert gate is not None
    is_ref = cfg.name == reference_config
    work = camp.output_dir / "lm-eval" / cfg.name
    try:
        run = run_harness(gate, url, model, Path(work))
        mine = sample_scores(run, gate.metric, gate.filter)
    except HarnessFailed as exc:
        msg = f"cannot gate: {exc}"
        return CheckResult("eval", False, msg, {"verdict": "cannot-gate"}, gating=not is_ref), None
    record = {**run.to_json(), "metric": gate.metric, "filter": gate.filter}
    metric = _metric_name(run, gate)
    if is_ref:
        return _reference_check(gate, mine, metric), record
    stored = store.latest_verification(camp.campaign.name, reference_config, SAMPLES_KIND)
    if stored is None:
        why = f"no stored lm-eval samples of the reference config {reference_config!r}"
        return CheckResult("eval", False, f"cannot gate: {why}", {"verdict": "cannot-gate"}), record
    try:
        ref = sample_scores(HarnessRun.from_json(stored.to_json()), gate.metric, gate.filter)
        gap = score_gap(ref, mine, gate.level, gate.seed)
    except (HarnessFailed, ValueError) as exc:
        return CheckResult("eval", False, f"cannot gate: {exc}", {"verdict": "cannot-gate"}), record
    ok = gap_passes(gap, gate.max_drop)
    detail = {
        "verdict": "pass" if ok else "fail",
        "metric": metric,
        "max_drop": gate.max_drop,
        **gap.to_json(),
    }
    return CheckResult("eval", ok, gap_message(gap, gate, metric), detail), record


def _reference_check(gate: EvalGate, mine: dict[DocKey, float], metric: str) -> CheckResult:
    gap = score_gap(mine, mine, gate.level, gate.seed)
    s = gap.reference
    msg = (
        f"reference: {_what(gate)} {metric} {s.estimate:.3f} ({s.level:.0%} [{s.low:.3f}, "
        f"{s.high:.3f}]) over {gap.docs} documents"
    )
    detail = {"verdict": "reference", "metric": metric, "docs": gap.docs, "score": s.to_json()}
    return CheckResult("eval", True, msg, detail, gating=False)

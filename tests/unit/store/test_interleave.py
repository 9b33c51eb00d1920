"""The baseline's passes read back (``store.interleave``): grouped by load point, purpose and
the candidate each was measured before; a pass measured again is its own; the nearest pass
is the last one before the candidate's runs, else the first after."""

from __future__ import annotations

from inferlab.store import RunRow
from inferlab.store.interleave import INTERLEAVE_TAG, nearest_pass, passes_of


def _run(i: int, label: str = "C=1", before: str | None = None, trial: int = 0) -> RunRow:
    env = {INTERLEAVE_TAG: before} if before else {}
    return RunRow(
        i, "c", "baseline", "h", "inferlab bench", "d", label, 1, None, trial, None, "w",
        None, False, {}, env, 1, 0, purpose="interleave" if before else "measure",
    )  # fmt: skip


def test_passes_split_by_candidate_and_by_a_pass_measured_again() -> None:
    runs = [
        _run(1), _run(2, trial=1), _run(3, "C=4"),  # the first pass: 2 trials at C=1
        _run(6, before="b"), _run(7, before="b", trial=1),
        _run(9, before="b"), _run(10, before="b", trial=1),  # again (resumed): its own pass
    ]  # fmt: skip
    by = passes_of(runs)
    assert [[r.id for r in p.runs] for p in by["C=1"]] == [[1, 2], [6, 7], [9, 10]]
    assert [p.before for p in by["C=1"]] == [None, "b", "b"]
    assert [[r.id for r in p.runs] for p in by["C=4"]] == [[3]]
    assert by["C=1"][1].describe() == "baseline's pass before b (runs 6–7)"
    assert by["C=4"][0].describe() == "baseline's first pass (run 3)"


def test_the_nearest_pass_is_the_last_before_the_candidate_else_the_first_after() -> None:
    ps = passes_of([_run(1), _run(5, before="b"), _run(9, before="c")])["C=1"]
    cand = [_run(7, before=None)]  # a candidate's run at C=1, measured after pass 5
    assert (p := nearest_pass(ps, cand)) is not None and p.first == 5
    assert (p := nearest_pass(ps, [_run(3)])) is not None and p.first == 1
    assert (p := nearest_pass(ps[1:], [_run(3)])) is not None and p.first == 5  # none before
    assert nearest_pass([], cand) is None and nearest_pass(ps, []) is None

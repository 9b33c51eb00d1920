"""Verification checks (``verify.checks``): a non-gating failure does not fail verification."""

from __future__ import annotations

from inferlab.verify.checks import CheckResult, VerifyReport


def test_non_gating_failure_does_not_fail_verification() -> None:
    gate = CheckResult("equivalence", False, "greedy outputs match 1/2")
    info = CheckResult("equivalence", False, "not gating ...", gating=False)
    ok = CheckResult("length", True, "asked 8, got 8")
    assert VerifyReport([ok, info], None).passed
    assert not VerifyReport([ok, info], None).diverged
    assert VerifyReport([ok, gate], None).failures() == [gate]


def test_summary_names_every_gating_failure() -> None:
    """One line, the text ``run``, ``up`` and ``run --ray`` tell a verify failure with."""
    probe = CheckResult("probe", False, "no match for '\\w'")
    gate = CheckResult("equivalence", False, "greedy outputs match 1/2")
    info = CheckResult("length", False, "asked 8, got 7", gating=False)
    assert VerifyReport([probe, info], None).summary() == (
        "failed verification: probe: no match for '\\w'"
    )
    assert VerifyReport([probe, gate], None).summary() == (
        "diverged from the reference: probe: no match for '\\w'; "
        "equivalence: greedy outputs match 1/2"
    )

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

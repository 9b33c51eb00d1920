"""Verify before measuring: smoke probes, greedy equivalence, output length, stream form."""

from inferlab.verify.checks import (
    EQUIVALENCE_PROMPTS,
    CheckResult,
    GreedyOutputs,
    VerifyReport,
    verify_endpoint,
)

__all__ = ["EQUIVALENCE_PROMPTS", "CheckResult", "GreedyOutputs", "VerifyReport", "verify_endpoint"]

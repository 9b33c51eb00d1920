"""The bench config (``config.bench``): bad adaptive (``requests = "auto"``) settings name
the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferlab.config.bench import BenchConfig


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"precision": 0.0}, "precision"),
        ({"precision": 1.0}, "precision"),
        ({"min_requests": 300, "max_requests": 200}, r"min_requests \(300\) is more than"),
        ({"max_requests": 0}, "needs a cap"),
        ({"concurrency": [], "rate": [2.0]}, "closed-loop"),
        ({"duration_s": 5.0}, "exclude each other"),
    ],
)
def test_bad_auto_settings_name_the_field(kw: dict[str, object], message: str) -> None:
    base: dict[str, object] = dict(url="http://x", concurrency=[1], requests="auto")
    base.update(kw)
    with pytest.raises(ValidationError, match=message):
        BenchConfig(**base)  # type: ignore[arg-type]


def test_slo_parse_takes_distribution_limits_and_names_a_bad_key() -> None:
    from inferlab.config.bench import SLO
    from inferlab.errors import ConfigError

    slo = SLO.parse("ttft_p99_ms=500, tpot_p50_ms=20,tpot_p99_ms=40,e2e_p99_ms=9000,itl_p99_ms=80")
    assert slo.limits() == {
        "ttft_p99_ms": 500, "tpot_p50_ms": 20, "tpot_p99_ms": 40, "e2e_p99_ms": 9000,
        "itl_p99_ms": 80,
    }  # fmt: skip
    assert SLO.parse("ttft_ms=500").limits() == {"ttft_ms": 500} and SLO().empty
    with pytest.raises(ConfigError, match="--slo: unknown key 'tpot_p90_ms'; expected .*itl_p99"):
        SLO.parse("tpot_p90_ms=3")
    with pytest.raises(ConfigError, match="--slo: tpot_p99_ms: .*greater than 0"):
        SLO.parse("tpot_p99_ms=0")

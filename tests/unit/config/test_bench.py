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

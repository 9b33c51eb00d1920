"""Suite-wide: every ``vllm`` or ``ray`` test is also ``serial`` (``make unit`` runs the
``serial`` ones alone, after the parallel pass over the rest)."""

from __future__ import annotations

import pytest

ALONE = ("vllm", "ray")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(m) for m in ALONE):
            item.add_marker(pytest.mark.serial)

"""inferlab: measurement-driven optimization of LLM inference serving."""

from __future__ import annotations

__version__ = "0.2.0"

#: Version of the metric definitions (docs/metrics.md). Bump when a definition changes:
#: results measured under different definitions are not comparable.
METRICS_VERSION = 1

__all__ = ["METRICS_VERSION", "__version__"]

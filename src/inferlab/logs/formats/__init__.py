"""The log-line formats inferlab reads, one table per engine (``sglang``, ``vllm``,
``llamacpp``) and one of engine-neutral lines (``common``), all read by ``base.read``.

``FORMATS`` is every table in this order; within a record kind (``inferlab.logs.parsers``
applies the kinds in its own order) a format comes before those of the tables after it.
Adding a line: add a ``LineFormat`` to its engine's table, of the kind whose meaning it has
(``step`` for a startup milestone, ``flag``, ...), or of a new kind with its sink
(``inferlab.logs.sinks``).
"""

from __future__ import annotations

from inferlab.logs.formats import common, llamacpp, sglang, vllm
from inferlab.logs.formats.base import Advice, Field, LineFormat, Record
from inferlab.logs.formats.match import read

__all__ = ["ADVICE", "FORMATS", "MARKERS", "Advice", "Field", "LineFormat", "Record", "read"]

FORMATS: tuple[LineFormat, ...] = (
    *sglang.FORMATS,
    *vllm.FORMATS,
    *llamacpp.FORMATS,
    *common.FORMATS,
)
#: engine → the names in a line that hint at it (weak evidence, when no format read the line)
MARKERS: dict[str, tuple[str, ...]] = {
    sglang.E: sglang.MARKERS,
    vllm.E: vllm.MARKERS,
    llamacpp.E: llamacpp.MARKERS,
}
#: every engine's performance advice (finding ``perf-advice``)
ADVICE: tuple[Advice, ...] = vllm.ADVICE

"""Reads the store only; turns runs into comparisons and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.report.compare import build_comparison
    from inferlab.report.compare_export import render_csv, render_md, to_json
    from inferlab.report.comparison import Comparison
    from inferlab.report.render import write_report

__all__ = ["Comparison", "build_comparison", "render_csv", "render_md", "to_json", "write_report"]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.report.compare": ("build_comparison",),
        "inferlab.report.compare_export": ("render_csv", "render_md", "to_json"),
        "inferlab.report.comparison": ("Comparison",),
        "inferlab.report.render": ("write_report",),
    },
)

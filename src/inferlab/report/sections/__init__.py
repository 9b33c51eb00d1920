"""The report's sections past the verdicts: lever evidence, tuning, recon, profiles, log
findings, levers ranked, predictions checked, cluster placement, and TTFT by turn of
multi-turn sessions.

Each builder reads the store only and returns a ``Section`` (or ``None`` when the campaign has
nothing of its kind); ``SECTIONS`` is their order in the report. A new section is one module
here and one row of ``SECTIONS``."""

from __future__ import annotations

from inferlab.report.sections.applied import applied_section
from inferlab.report.sections.base import Section, SectionBuilder, md_text
from inferlab.report.sections.cluster import cluster_section
from inferlab.report.sections.findings import findings_section
from inferlab.report.sections.levers import levers_section, predictions_section
from inferlab.report.sections.profile import profile_section
from inferlab.report.sections.recon import recon_section
from inferlab.report.sections.search import search_section
from inferlab.report.sections.sessions import sessions_section
from inferlab.report.sections.slo import slo_section
from inferlab.report.sections.tuning import tuning_section
from inferlab.store import Store

__all__ = ["SECTIONS", "Section", "SectionBuilder", "build_sections", "md_text"]

#: the sections in report order
SECTIONS: tuple[SectionBuilder, ...] = (
    slo_section,
    sessions_section,
    applied_section,
    tuning_section,
    recon_section,
    profile_section,
    findings_section,
    levers_section,
    predictions_section,
    search_section,
    cluster_section,
)


def build_sections(store: Store, campaign: str) -> list[Section]:
    """Every section that has something to show for ``campaign``, in ``SECTIONS`` order."""
    return [sec for fn in SECTIONS if (sec := fn(store, campaign)) is not None]

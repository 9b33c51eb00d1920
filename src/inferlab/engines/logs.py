"""Log signatures as data: what a server log line means, whether it is fatal, what to do.

Real logs arrive decorated: ANSI colours, ``docker compose`` service prefixes
(``svc  | ``), journald prefixes (``Dec 04 01:32:11 host llama-server[10778]: ``),
``kubectl logs --timestamps`` / RFC 3339 stamps, vLLM process tags (``(APIServer pid=1)``,
``(RayWorkerWrapper pid=880, ip=…)``), torch rank tags (``[rank0]:``) — and terminals hard-wrap
long lines. ``clean_line`` strips the decorations; ``match_signatures`` tries each line alone and
joined with the next line (a hard wrap): a signature that only matches across the join, and is
more specific than the line's own match, wins and is reported on the first line.
Each line gets at most one match: the first signature (in list order) that matches it, so
specific signatures come before general ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from inferlab.picks import pick

__all__ = [
    "LogMatch",
    "LogSignature",
    "Severity",
    "clean_line",
    "fatal_sig",
    "generic_fatal",
    "match_signatures",
    "primary_failure",
    "sig",
]

Severity = Literal["info", "warning", "error"]

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r")
_PREFIXES = [
    # docker compose: "service-name  | "
    re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\s+\|\s?"),
    # journald / syslog: "Dec 04 01:32:11 host proc[123]: "
    re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: "),
    # kubectl/docker --timestamps: "2025-01-02T03:04:05.123456789Z "
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)\s"),
    # vLLM / Ray process tags: "(APIServer pid=1009) ", "(RayWorkerWrapper pid=345, ip=1.2.3.4) "
    re.compile(r"^\([A-Za-z_][\w.-]* pid=\d+(?:, ip=[\d.:a-fA-F]+)?\)\s?"),
    # torch elastic rank tag: "[rank0]: "
    re.compile(r"^\[rank\d+\]:\s?"),
]


def clean_line(line: str) -> str:
    """``line`` without ANSI escapes, trailing whitespace and known transport prefixes."""
    text = _ANSI_RE.sub("", line).rstrip()
    changed = True
    while changed:
        changed = False
        for rx in _PREFIXES:
            m = rx.match(text)
            if m and m.end() > 0:
                text = text[m.end() :]
                changed = True
    return text


@dataclass(frozen=True)
class LogSignature:
    """A kind of log line, recognised by ``pattern`` (searched, case-sensitive unless compiled
    otherwise), with what it means for the server and what to change."""

    kind: str
    pattern: re.Pattern[str]
    severity: Severity
    fatal: bool
    remedy: str
    #: engine flags the remedy turns (for a tuner or a report to point at)
    flags: tuple[str, ...] = ()
    #: the server answers requests from this line on
    ready: bool = False
    #: a consequence of another failure (e.g. "Engine core initialization failed"); a more
    #: specific fatal line, when present, is the root cause
    generic: bool = False
    #: where the exact text comes from (fixture log, engine source)
    source: str = ""
    #: the engine refused the config as it read it (a validation error, not a crash or an
    #: OOM): the same values of the flags involved (``flags`` and any the line names) fail
    #: every time, whatever the other flags are
    refusal: bool = False


def sig(
    kind: str,
    pattern: str,
    severity: Severity,
    *,
    fatal: bool = False,
    remedy: str = "",
    flags: Sequence[str] = (),
    ready: bool = False,
    generic: bool = False,
    source: str = "",
    ignorecase: bool = False,
    refusal: bool = False,
) -> LogSignature:
    """Build a ``LogSignature`` from a regex string."""
    return LogSignature(
        kind=kind,
        pattern=re.compile(pattern, re.IGNORECASE if ignorecase else 0),
        severity=severity,
        fatal=fatal,
        remedy=remedy,
        flags=tuple(flags),
        ready=ready,
        generic=generic,
        source=source,
        refusal=refusal,
    )


def fatal_sig(
    kind: str,
    pattern: str,
    *,
    remedy: str = "",
    flags: Sequence[str] = (),
    generic: bool = False,
    source: str = "",
    ignorecase: bool = False,
    refusal: bool = False,
) -> LogSignature:
    """A line after which the server does not serve (severity ``error``, ``fatal``);
    ``refusal``: the engine refused the config (see ``LogSignature.refusal``)."""
    return sig(
        kind,
        pattern,
        "error",
        fatal=True,
        remedy=remedy,
        flags=flags,
        generic=generic,
        source=source,
        ignorecase=ignorecase,
        refusal=refusal,
    )


def generic_fatal(kind: str, pattern: str, *, remedy: str, source: str) -> LogSignature:
    """A fatal line that follows from another failure (``generic``: a more specific fatal line,
    when present, is the root cause)."""
    return fatal_sig(kind, pattern, generic=True, remedy=remedy, source=source)


@dataclass(frozen=True)
class LogMatch:
    """A classified log line. ``line_no`` is 1-based; ``text`` is the cleaned line (joined with
    the next one when the match spans a terminal hard wrap)."""

    kind: str
    severity: Severity
    fatal: bool
    line_no: int
    text: str
    remedy: str
    ready: bool = False
    flags: tuple[str, ...] = field(default=())
    generic: bool = False
    #: position of the signature in the engine's list (lower: more specific)
    rank: int = 0
    refusal: bool = False

    def involved(self) -> tuple[str, ...]:
        """A refusal's flags: the signature's and those the line names (``--jitter-ms``), in
        order, once each; () for any other line."""
        if not self.refusal:
            return ()
        named = re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", self.text)
        return tuple(dict.fromkeys([*self.flags, *named]))


def _match(s: LogSignature, line_no: int, text: str, rank: int) -> LogMatch:
    return LogMatch(
        **pick(s, "kind", "severity", "fatal", "remedy", "ready", "flags", "generic", "refusal"),
        line_no=line_no,
        text=text,
        rank=rank,
    )


def _first(signatures: Sequence[LogSignature], text: str) -> int | None:
    for rank, s in enumerate(signatures):
        if s.pattern.search(text):
            return rank
    return None


def match_signatures(
    lines: str | Iterable[str], signatures: Sequence[LogSignature]
) -> list[LogMatch]:
    """Classify ``lines`` (a text or its lines) against ``signatures``; in line order."""
    raw = lines.splitlines() if isinstance(lines, str) else list(lines)
    clean = [clean_line(x) for x in raw]
    out: list[LogMatch] = []
    for i, text in enumerate(clean):
        rank = _first(signatures, text)
        hit: LogMatch | None = None
        if rank is not None:
            hit = _match(signatures[rank], i + 1, text, rank)
        if i + 1 < len(clean) and text and clean[i + 1]:
            # a more specific signature spanning a hard wrap beats a match on the line alone
            joined = text + clean[i + 1]
            for r, s in enumerate(signatures[: len(signatures) if rank is None else rank]):
                m = s.pattern.search(joined)
                if m and m.start() < len(text) < m.end():
                    hit = _match(s, i + 1, joined, r)
                    break
        if hit is not None:
            out.append(hit)
    return out


def primary_failure(matches: Iterable[LogMatch]) -> LogMatch | None:
    """The likely root cause among fatal matches: a specific one before a generic consequence,
    then the most specific signature (lowest rank), then the earliest line; None if no fatal."""
    fatal = [m for m in matches if m.fatal]
    if not fatal:
        return None
    return min(fatal, key=lambda m: (m.generic, m.rank, m.line_no))

"""The report section "sessions": for each multi-turn point (``sessions:UxT``), TTFT by turn
index per config, beside the point's prefix-cache hit rate and KV-cache usage read from the
engine's ``/metrics``. Turn 1 has no history; later turns resend it, so a prefix cache shows
as TTFT that stops growing with the turn. Reads the store only."""

from __future__ import annotations

from html import escape

from inferlab.config.pattern import LoadPattern, Sessions
from inferlab.errors import ConfigError
from inferlab.report.sections.base import Section, table
from inferlab.stats.turns import by_turn, turn_interval_text
from inferlab.store import Store

__all__ = ["session_rows", "sessions_section"]

HEAD = (
    "config",
    "point",
    "trial",
    "turn",
    "requests",
    "TTFT p50 ms [interval ≥ 95%] (coverage)",
    "prompt tokens",
    "prefix-cache hit rate",
    "mean KV usage",
)


def _is_sessions(label: str) -> bool:
    try:
        return isinstance(LoadPattern.parse(label), Sessions)
    except ConfigError:
        return False


def _rate(value: object) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) else "—"


def _hit(server: dict[str, object], warnings: list[dict[str, str]]) -> str:
    """The point's hit rate; "0 lookups" where the engine looked nothing up (caching off);
    marked "not the workload's" where the client's tokenizer was not the server's."""
    rate = server.get("prefix_cache_hit_rate", server.get("prefix_cache_hit_rate_gauge"))
    if rate is None and server.get("prefix_cache_queries") == 0:
        return "0 lookups"
    if rate is not None and any(w.get("kind") == "tokenizer-mismatch" for w in warnings):
        return f"{_rate(rate)} (wrong tokenizer: not the workload's)"
    return _rate(rate)


def session_rows(store: Store, campaign: str) -> list[tuple[str, ...]]:
    """One row per turn of every stored sessions point of ``campaign`` (measurements only)."""
    out: list[tuple[str, ...]] = []
    for run in store.runs(campaign=campaign):
        if run.purpose != "measure" or not _is_sessions(run.label):
            continue
        server = run.summary.get("server") or {}
        hit = _hit(server, store.runs.meta(run.id).get("warnings") or [])
        kv = _rate(server.get("mean_kv_cache_usage"))
        for t in by_turn(store.requests(run.id)):
            ttft = turn_interval_text(t)
            prompt = f"{t.prompt_tokens_mean:.0f}" if t.prompt_tokens_mean is not None else "—"
            row = (run.config, run.label, str(run.trial), str(t.turn + 1), str(t.requests))
            out.append((*row, ttft, prompt, hit if t.turn == 0 else "", kv if t.turn == 0 else ""))
    return out


def sessions_section(store: Store, campaign: str) -> Section | None:
    """TTFT by turn of ``campaign``'s sessions points; None when it has none."""
    rows = session_rows(store, campaign)
    if not rows:
        return None
    intro = (
        "Multi-turn sessions: each turn resends the conversation so far, so its prompt grows. "
        "TTFT by turn is the median over the users with its distribution-free order-statistic "
        "interval, of exact coverage ≥ 95% (stated; none below 6 users: 5 values' [min, max] "
        "covers 93.75%, 3 values' 75%); "
        "the hit rate is the point's prefix-cache hits over looked-up prompt tokens, from the "
        "engine's counters (docs/launch.md, Scrape); a point whose prompts the server counted "
        "otherwise than the client's tokenizer (tokenizer-mismatch) has it marked."
    )
    t_md, t_html = table(HEAD, rows)
    html = f'<p class="muted">{escape(intro)}</p>{t_html}'
    return Section("sessions", "Sessions: TTFT by turn", "\n".join([intro, "", *t_md]), html)

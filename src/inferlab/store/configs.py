"""What the store answers about campaigns, configs and which load points a config has measured
(the lookups of ``--resume``, the report and the levers), read as typed rows."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

__all__ = ["Configs", "MeasuredPoint", "StoredConfig"]


@dataclass(frozen=True)
class StoredConfig:
    """One stored config row: its content (secrets already removed when it was stored)."""

    id: int
    name: str
    #: content hash of engine, model, argv, env and extra (a changed config gets a new row)
    hash: str
    engine: str | None
    model: str | None
    argv: list[str]
    env: dict[str, str]
    extra: dict[str, Any]


@dataclass(frozen=True)
class MeasuredPoint:
    """A finished (not interrupted, not rejected) load point of one config, as stored."""

    label: str
    trial: int
    #: "measure" or "recheck" (``store.recheck``)
    purpose: str
    summary: dict[str, Any]


class Configs:
    """The campaign and config lookups of a :class:`~inferlab.store.Store`."""

    db: sqlite3.Connection

    def campaign_names(self) -> list[str]:
        """Every stored campaign's name, sorted."""
        return [str(r[0]) for r in self.db.execute("SELECT name FROM campaigns ORDER BY name")]

    def configs(self, campaign: str) -> list[StoredConfig]:
        """Every config row of a campaign, oldest first (a name reused with new content has
        one row per content; the later is the newer)."""
        rows = self.db.execute(
            "SELECT g.id, g.name, g.hash, g.engine, g.model, g.argv_json, g.env_json, "
            "g.extra_json FROM configs g JOIN campaigns c ON c.id = g.campaign_id "
            "WHERE c.name=? ORDER BY g.id",
            (campaign,),
        ).fetchall()
        return [
            StoredConfig(
                int(r[0]),
                r[1],
                r[2],
                r[3],
                r[4],
                json.loads(r[5]),
                json.loads(r[6]),
                json.loads(r[7]),
            )
            for r in rows
        ]

    def latest_config(self, campaign: str, name: str) -> tuple[int, str | None] | None:
        """The newest config row named ``name`` in ``campaign``: (id, engine), or None."""
        row = self.db.execute(
            "SELECT g.id, g.engine FROM configs g JOIN campaigns c ON c.id = g.campaign_id "
            "WHERE c.name=? AND g.name=? ORDER BY g.id DESC LIMIT 1",
            (campaign, name),
        ).fetchone()
        return (int(row[0]), row[1]) if row else None

    def config_names(self, campaign: str) -> list[str]:
        """Config names of a campaign, in the order they were first stored."""
        rows = self.db.execute(
            "SELECT g.name FROM configs g JOIN campaigns c ON c.id = g.campaign_id "
            "WHERE c.name=? GROUP BY g.name ORDER BY min(g.id)",
            (campaign,),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def measured_cells(self, campaign: str, config_id: int) -> set[tuple[str, int]]:
        """(label, trial) cells of config row ``config_id`` measured to the end (what
        ``--resume`` skips): not interrupted, not rejected, purpose "measure"."""
        rows = self.db.execute(
            "SELECT r.label, r.trial FROM runs r JOIN campaigns c ON c.id = r.campaign_id "
            "WHERE c.name = ? AND r.config_id = ? AND r.interrupted = 0 AND r.rejected IS NULL "
            "AND r.purpose = 'measure'",
            (campaign, config_id),
        ).fetchall()
        return {(str(a), int(b)) for a, b in rows}

    def measured_points(self, config_id: int) -> list[MeasuredPoint]:
        """The finished measurements and rechecks of config row ``config_id``, oldest first
        (what the baseline's recheck still has to do)."""
        rows = self.db.execute(
            "SELECT label, trial, purpose, summary_json FROM runs WHERE config_id = ? "
            "AND interrupted = 0 AND rejected IS NULL AND purpose IN ('measure', 'recheck') "
            "ORDER BY id",
            (config_id,),
        ).fetchall()
        return [MeasuredPoint(str(a), int(b), str(c), json.loads(d)) for a, b, c, d in rows]

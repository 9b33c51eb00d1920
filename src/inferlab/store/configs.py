"""The store's campaigns and configs (``store.configs``): their identities, written once per
content, and the lookups of ``--resume``, the report and the levers, read as typed rows."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.secrets import scrub_argv, scrub_env
from inferlab.store.jsoncols import dumps, now

__all__ = ["Configs", "StoredConfig"]


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


class Configs:
    """The campaign and config rows of a store. Called, the config rows of a campaign."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def campaign_id(self, name: str, description: str | None = None) -> int:
        """The campaign row named ``name``, made when there is none."""
        row = self.db.execute("SELECT id FROM campaigns WHERE name=?", (name,)).fetchone()
        if row:
            return int(row[0])
        cur = self.db.execute(
            "INSERT INTO campaigns(name, created_at, description) VALUES (?,?,?)",
            (name, now(), description),
        )
        return int(cur.lastrowid or 0)

    def config_id(
        self,
        campaign_id: int,
        name: str,
        *,
        engine: str | None,
        model: str | None,
        argv: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """The config row for this exact content (a changed config gets a new row)."""
        argv_s = scrub_argv(list(argv))
        env_s = scrub_env(dict(env or {}))
        extra_d = dict(extra or {})
        content = {"engine": engine, "model": model, "argv": argv_s, "env": env_s, "extra": extra_d}
        h = hashlib.sha256(dumps(content).encode()).hexdigest()[:16]
        row = self.db.execute(
            "SELECT id FROM configs WHERE campaign_id=? AND name=? AND hash=?",
            (campaign_id, name, h),
        ).fetchone()
        if row:
            return int(row[0])
        cur = self.db.execute(
            "INSERT INTO configs(campaign_id, name, engine, model, argv_json, env_json, "
            "extra_json, hash, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                campaign_id,
                name,
                engine,
                model,
                dumps(argv_s),
                dumps(env_s),
                dumps(extra_d),
                h,
                now(),
            ),
        )
        return int(cur.lastrowid or 0)

    def names(self) -> list[str]:
        """Every stored campaign's name, sorted."""
        return [str(r[0]) for r in self.db.execute("SELECT name FROM campaigns ORDER BY name")]

    def __call__(self, campaign: str) -> list[StoredConfig]:
        """Every config row of a campaign, oldest first (a name reused with new content has
        one row per content; the later is the newer)."""
        rows = self.db.execute(
            "SELECT g.id, g.name, g.hash, g.engine, g.model, g.argv_json, g.env_json, "
            "g.extra_json FROM configs g JOIN campaigns c ON c.id = g.campaign_id "
            "WHERE c.name=? ORDER BY g.id",
            (campaign,),
        ).fetchall()
        return [
            StoredConfig(int(r[0]), r[1], r[2], r[3], r[4], *(json.loads(x) for x in r[5:8]))
            for r in rows
        ]

    def latest(self, campaign: str, name: str) -> tuple[int, str | None] | None:
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

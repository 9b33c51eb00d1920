"""The store's verifications (``store.verifications``): a config's checks, its launch and stop
records, its reference outputs, each a typed body of its kind (``store.bodies``), secrets
removed before they are written. Called, the stored verifications of a campaign."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from inferlab.secrets import scrub_obj
from inferlab.store.bodies import VERIFICATIONS, Body
from inferlab.store.checks import EXACT_KINDS, LaunchRecord, LeverCheck
from inferlab.store.jsoncols import dumps, now

__all__ = ["StoredVerification", "Verifications"]

D = TypeVar("D", bound=Body)


@dataclass(frozen=True)
class StoredVerification(Generic[D]):
    """One stored verification result of a config (by name)."""

    config: str
    #: "launch", "runtime", "lever", "greedy-outputs", a check's kind, ...
    kind: str
    passed: bool
    #: what the check recorded (secrets removed), typed by its kind
    detail: D
    created_at: str


class Verifications:
    """The verification rows of a store."""

    def __init__(self, db: sqlite3.Connection, where: str) -> None:
        self.db = db
        self.where = where

    def add(
        self,
        config_id: int,
        kind: str,
        passed: bool,
        detail: Mapping[str, object] | Body,
        run_id: int | None = None,
    ) -> int:
        """One verification result (a check, or a config's reference greedy outputs); the
        detail validated by its kind's model, secrets in it (argv, log lines) removed."""
        body = VERIFICATIONS.check(kind, detail)
        kept = body if kind in EXACT_KINDS else scrub_obj(body)  # compared char by char
        cur = self.db.execute(
            "INSERT INTO verifications(config_id, run_id, kind, passed, detail_json, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (config_id, run_id, kind, int(passed), dumps(kept), now()),
        )
        return int(cur.lastrowid or 0)

    def latest(
        self, campaign: str, config: str, kind: str, config_hash: str | None = None
    ) -> Body | None:
        """The newest stored verification ``kind`` of a config (by name, and by content when
        ``config_hash`` is given) in a campaign: its detail, or None."""
        sql = (
            "SELECT v.id, v.detail_json FROM verifications v JOIN configs g ON g.id = v.config_id "
            "JOIN campaigns c ON c.id = g.campaign_id WHERE c.name=? AND g.name=? AND v.kind=?"
        )
        args: tuple[str, ...] = (campaign, config, kind)
        if config_hash is not None:
            sql += " AND g.hash=?"
            args += (config_hash,)
        row = self.db.execute(sql + " ORDER BY v.id DESC LIMIT 1", args).fetchone()
        return None if row is None else self._body(kind, row[0], row[1])

    def latest_of(
        self, model: type[D], campaign: str, config: str, kind: str, config_hash: str | None = None
    ) -> D | None:
        """``latest``, typed as ``model`` (StoreError: ``kind``'s bodies are not ``model``)."""
        VERIFICATIONS.model(kind)
        got = self.latest(campaign, config, kind, config_hash)
        return None if got is None else _as(model, kind, got)

    def __call__(
        self, campaign: str, *, kinds: Sequence[str] | None = None, config: str | None = None
    ) -> list[StoredVerification[Body]]:
        """The stored verifications of a campaign (of those ``kinds``, of one config by name),
        oldest first."""
        sql = (
            "SELECT g.name, v.kind, v.passed, v.detail_json, v.created_at, v.id "
            "FROM verifications v JOIN configs g ON g.id = v.config_id "
            "JOIN campaigns c ON c.id = g.campaign_id WHERE c.name=?"
        )
        args: tuple[str, ...] = (campaign,)
        if kinds is not None:
            sql += f" AND v.kind IN ({','.join('?' * len(kinds))})"
            args += tuple(kinds)
        if config is not None:
            sql += " AND g.name=?"
            args += (config,)
        rows = self.db.execute(sql + " ORDER BY v.id", args).fetchall()
        return [
            StoredVerification(r[0], r[1], bool(r[2]), self._body(r[1], r[5], r[3]), r[4])
            for r in rows
        ]

    def of(
        self, model: type[D], campaign: str, kind: str, *, config: str | None = None
    ) -> list[StoredVerification[D]]:
        """The stored verifications ``kind`` of a campaign, typed as ``model``."""
        VERIFICATIONS.model(kind)
        return [
            StoredVerification(v.config, v.kind, v.passed, _as(model, kind, v.detail), v.created_at)
            for v in self(campaign, kinds=(kind,), config=config)
        ]

    def launches(
        self, campaign: str, *, config: str | None = None
    ) -> list[StoredVerification[LaunchRecord]]:
        """The stored launch records of a campaign (of one config by name), oldest first."""
        return self.of(LaunchRecord, campaign, "launch", config=config)

    def lever_checks(self, campaign: str) -> list[StoredVerification[LeverCheck]]:
        """The stored lever checks of a campaign, oldest first."""
        return self.of(LeverCheck, campaign, "lever")

    def configs(self, campaign: str, kind: str) -> list[str]:
        """Names of the configs of a campaign with a stored verification ``kind``, in config
        order."""
        rows = self.db.execute(
            "SELECT DISTINCT g.name FROM verifications v JOIN configs g ON g.id = v.config_id "
            "JOIN campaigns c ON c.id = g.campaign_id WHERE c.name=? AND v.kind=? "
            "ORDER BY g.id",
            (campaign, kind),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def _body(self, kind: str, row_id: int, text: str) -> Body:
        return VERIFICATIONS.read(kind, json.loads(text), f"{self.where}: verification {row_id}")


def _as(model: type[D], kind: str, body: Body) -> D:
    """``body`` as ``model``: what ``kind`` is registered with."""
    if not isinstance(body, model):
        raise TypeError(f"verifications {kind!r} are {type(body).__name__}, not {model.__name__}")
    return body

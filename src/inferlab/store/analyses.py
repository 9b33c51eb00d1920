"""The store's analyses (``store.analyses``: profiles, recon snapshots, tuning results, the
levers' predictions, ...) and log findings (``store.findings``), each analysis a typed body of
its kind (``store.bodies``). Called, the stored analyses of one kind."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from inferlab.secrets import scrub_obj, scrub_text
from inferlab.store.bodies import ANALYSES, Body
from inferlab.store.configs import Configs
from inferlab.store.jsoncols import dumps, now
from inferlab.store.models import PREDICTION, PROFILE, ProfileBody, ProfileCapture, StoredPrediction
from inferlab.store.outcomes import CONFIRM  # noqa: F401  (its module registers its kinds)

__all__ = ["Analyses", "Findings", "StoredAnalysis", "StoredFinding"]

A = TypeVar("A", bound=Body)


@dataclass(frozen=True)
class StoredAnalysis(Generic[A]):
    """One stored analysis: where it belongs, its name, and its body typed by its kind."""

    id: int
    campaign: str | None
    config: str | None
    name: str
    data: A
    created_at: str


class Analyses:
    """The analyses rows of a store."""

    def __init__(self, db: sqlite3.Connection, configs: Configs, where: str) -> None:
        self.db = db
        self._configs = configs
        self.where = where

    def add(
        self,
        kind: str,
        name: str,
        data: Mapping[str, object] | Body,
        *,
        campaign: str | None = None,
        config_id: int | None = None,
    ) -> int:
        """Store one analysis as JSON, validated by its kind's model first."""
        body = ANALYSES.check(kind, data)
        cid = self._configs.campaign_id(campaign) if campaign else None
        cur = self.db.execute(
            "INSERT INTO analyses(campaign_id, config_id, kind, name, data_json, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (cid, config_id, kind, name, dumps(body), now()),
        )
        return int(cur.lastrowid or 0)

    def __call__(self, kind: str, campaign: str | None = None) -> list[StoredAnalysis[Body]]:
        """Stored analyses of one kind (of a campaign, or all), oldest first."""
        sql = (
            "SELECT a.id, c.name, g.name, a.name, a.data_json, a.created_at FROM analyses a "
            "LEFT JOIN campaigns c ON c.id = a.campaign_id "
            "LEFT JOIN configs g ON g.id = a.config_id WHERE a.kind=?"
        )
        args: tuple[str, ...] = (kind,)
        if campaign is not None:
            sql += " AND c.name=?"
            args += (campaign,)
        rows = self.db.execute(sql + " ORDER BY a.id", args).fetchall()
        where = f"{self.where}: analysis"
        return [
            StoredAnalysis(
                r[0],
                r[1],
                r[2],
                r[3],
                ANALYSES.read(kind, json.loads(r[4]), f"{where} {r[0]}"),
                r[5],
            )
            for r in rows
        ]

    def of(self, model: type[A], kind: str, campaign: str | None = None) -> list[StoredAnalysis[A]]:
        """``self(kind, campaign)``, typed as ``model`` (TypeError: ``kind`` is another's)."""
        out: list[StoredAnalysis[A]] = []
        for a in self(kind, campaign):
            if not isinstance(a.data, model):
                raise TypeError(f"analyses {kind!r} are {type(a.data).__name__}, not {model}")
            out.append(StoredAnalysis(a.id, a.campaign, a.config, a.name, a.data, a.created_at))
        return out

    def predictions(self, campaign: str) -> list[StoredPrediction]:
        """The levers' stored predictions of a campaign, oldest first."""
        return [a.data for a in self.of(StoredPrediction, PREDICTION, campaign)]

    def add_prediction(
        self, data: Mapping[str, object], *, campaign: str, config_id: int | None = None
    ) -> int:
        """Store one lever's prediction (``levers.model.Lever.to_dict()`` with ``made_at``
        and ``version``), named by its ``key``."""
        return self.add(PREDICTION, str(data["key"]), data, campaign=campaign, config_id=config_id)

    def profiles(self, campaign: str | None) -> list[StoredAnalysis[ProfileBody]]:
        """The stored profile analyses of a campaign, oldest first."""
        return self.of(ProfileBody, PROFILE, campaign)

    def captures(self, config_id: int) -> list[ProfileCapture]:
        """The capture block of every stored profile of config row ``config_id`` (one without
        a block is left out)."""
        rows = self.db.execute(
            "SELECT id, data_json FROM analyses WHERE kind = ? AND config_id = ?",
            (PROFILE, config_id),
        ).fetchall()
        out = []
        for row_id, text in rows:
            body = ANALYSES.read(PROFILE, json.loads(text), f"{self.where}: analysis {row_id}")
            if isinstance(body, ProfileBody) and body.capture is not None:
                out.append(body.capture)
        return out


@dataclass(frozen=True)
class StoredFinding:
    """One stored log finding (``logs.model.Finding``, as stored), with its config by name."""

    id: int
    config: str | None
    kind: str
    severity: str
    message: str
    #: line numbers, values: any JSON
    evidence: object
    action: str | None
    source: str | None
    created_at: str


class Findings:
    """The findings rows of a store."""

    def __init__(self, db: sqlite3.Connection, configs: Configs) -> None:
        self.db = db
        self._configs = configs

    def add(
        self,
        findings: Sequence[Mapping[str, object]],
        *,
        campaign: str | None = None,
        config_id: int | None = None,
        source: str | None = None,
    ) -> int:
        """Store findings (dicts with kind, severity, message, evidence, action); returns count.

        ``evidence`` is any JSON (line numbers, values); ``source`` names the file mined."""
        cid = self._configs.campaign_id(campaign) if campaign else None
        self.db.executemany(
            "INSERT INTO findings(campaign_id, config_id, kind, severity, message, evidence_json, "
            "action, source, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                (
                    cid,
                    config_id,
                    str(f["kind"]),
                    str(f["severity"]),
                    scrub_text(str(f["message"])),
                    dumps(scrub_obj(f.get("evidence", {}))),
                    f.get("action"),
                    source,
                    now(),
                )
                for f in findings
            ),
        )
        return len(findings)

    def __call__(self, campaign: str) -> list[StoredFinding]:
        """Stored findings of a campaign, oldest first, each with its config name (or None)."""
        rows = self.db.execute(
            "SELECT f.id, g.name, f.kind, f.severity, f.message, f.evidence_json, f.action, "
            "f.source, f.created_at FROM findings f JOIN campaigns c ON c.id = f.campaign_id "
            "LEFT JOIN configs g ON g.id = f.config_id WHERE c.name=? ORDER BY f.id",
            (campaign,),
        ).fetchall()
        return [
            StoredFinding(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], r[8])
            for r in rows
        ]

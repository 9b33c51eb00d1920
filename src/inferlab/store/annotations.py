"""What the store keeps beside the runs: verification results, log findings and analyses
(profiles, recon snapshots, tuning results), secrets removed before they are written."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.secrets import scrub_obj, scrub_text
from inferlab.store.jsoncols import dumps, now
from inferlab.store.models import (
    LaunchRecord,
    LeverCheck,
    ProfileAnalysis,
    ProfileCapture,
    StoredLaunch,
    StoredLeverCheck,
    StoredPrediction,
)

__all__ = ["PREDICTION", "Annotations", "StoredVerification"]

#: the analyses kind of a lever's stored prediction
PREDICTION = "prediction"


@dataclass(frozen=True)
class StoredVerification:
    """One stored verification result of a config (by name)."""

    config: str
    #: "launch", "runtime", "lever", "greedy-outputs", a check's kind, ...
    kind: str
    passed: bool
    #: what the check recorded (secrets removed)
    detail: dict[str, Any]
    created_at: str


class Annotations:
    """The verifications, findings and analyses of a :class:`~inferlab.store.Store`."""

    db: sqlite3.Connection

    def campaign_id(self, name: str, description: str | None = None) -> int:
        raise NotImplementedError  # the Store's

    def add_verification(
        self,
        config_id: int,
        kind: str,
        passed: bool,
        detail: Mapping[str, Any],
        run_id: int | None = None,
    ) -> int:
        """One verification result (a check, or a config's reference greedy outputs); secrets
        in ``detail`` (argv, log lines) are removed first (``_scrubbed``)."""
        cur = self.db.execute(
            "INSERT INTO verifications(config_id, run_id, kind, passed, detail_json, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (config_id, run_id, kind, int(passed), dumps(_scrubbed(kind, detail)), now()),
        )
        return int(cur.lastrowid or 0)

    def latest_verification(
        self, campaign: str, config: str, kind: str, config_hash: str | None = None
    ) -> dict[str, Any] | None:
        """The newest stored verification ``kind`` of a config (by name, and by content when
        ``config_hash`` is given) in a campaign: its detail, or None."""
        sql = (
            "SELECT v.detail_json FROM verifications v JOIN configs g ON g.id = v.config_id "
            "JOIN campaigns c ON c.id = g.campaign_id WHERE c.name=? AND g.name=? AND v.kind=?"
        )
        args: tuple[Any, ...] = (campaign, config, kind)
        if config_hash is not None:
            sql += " AND g.hash=?"
            args += (config_hash,)
        row = self.db.execute(sql + " ORDER BY v.id DESC LIMIT 1", args).fetchone()
        return json.loads(row[0]) if row else None

    def verifications(
        self, campaign: str, *, kinds: Sequence[str] | None = None, config: str | None = None
    ) -> list[StoredVerification]:
        """The stored verifications of a campaign (of those ``kinds``, of one config by name),
        oldest first."""
        sql = (
            "SELECT g.name, v.kind, v.passed, v.detail_json, v.created_at FROM verifications v "
            "JOIN configs g ON g.id = v.config_id JOIN campaigns c ON c.id = g.campaign_id "
            "WHERE c.name=?"
        )
        args: tuple[Any, ...] = (campaign,)
        if kinds is not None:
            sql += f" AND v.kind IN ({','.join('?' * len(kinds))})"
            args += tuple(kinds)
        if config is not None:
            sql += " AND g.name=?"
            args += (config,)
        rows = self.db.execute(sql + " ORDER BY v.id", args).fetchall()
        return [StoredVerification(r[0], r[1], bool(r[2]), json.loads(r[3]), r[4]) for r in rows]

    def launches(self, campaign: str, *, config: str | None = None) -> list[StoredLaunch]:
        """The stored launch records of a campaign (of one config by name), oldest first."""
        return [
            StoredLaunch(v.config, v.passed, LaunchRecord.model_validate(v.detail), v.created_at)
            for v in self.verifications(campaign, kinds=("launch",), config=config)
        ]

    def lever_checks(self, campaign: str) -> list[StoredLeverCheck]:
        """The stored lever checks of a campaign, oldest first."""
        return [
            StoredLeverCheck(v.config, v.passed, LeverCheck.model_validate(v.detail), v.created_at)
            for v in self.verifications(campaign, kinds=("lever",))
        ]

    def verified_configs(self, campaign: str, kind: str) -> list[str]:
        """Names of the configs of a campaign with a stored verification ``kind``, in config
        order."""
        rows = self.db.execute(
            "SELECT DISTINCT g.name FROM verifications v JOIN configs g ON g.id = v.config_id "
            "JOIN campaigns c ON c.id = g.campaign_id WHERE c.name=? AND v.kind=? "
            "ORDER BY g.id",
            (campaign, kind),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def add_findings(
        self,
        findings: Sequence[Mapping[str, Any]],
        *,
        campaign: str | None = None,
        config_id: int | None = None,
        source: str | None = None,
    ) -> int:
        """Store findings (dicts with kind, severity, message, evidence, action); returns count.

        ``evidence`` is any JSON (line numbers, values); ``source`` names the file mined."""
        cid = self.campaign_id(campaign) if campaign else None
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

    def findings(self, campaign: str) -> list[dict[str, Any]]:
        """Stored findings of a campaign, oldest first, each with its config name (or None)."""
        rows = self.db.execute(
            "SELECT f.id, g.name, f.kind, f.severity, f.message, f.evidence_json, f.action, "
            "f.source, f.created_at FROM findings f JOIN campaigns c ON c.id = f.campaign_id "
            "LEFT JOIN configs g ON g.id = f.config_id WHERE c.name=? ORDER BY f.id",
            (campaign,),
        ).fetchall()
        keys = ("id", "config", "kind", "severity", "message", "evidence", "action", "source")
        out = []
        for r in rows:
            d = dict(zip(keys, r[:8]))
            d["evidence"] = json.loads(r[5])
            d["created_at"] = r[8]
            out.append(d)
        return out

    def add_analysis(
        self,
        kind: str,
        name: str,
        data: Mapping[str, Any],
        *,
        campaign: str | None = None,
        config_id: int | None = None,
    ) -> int:
        """Store one analysis (a profile, a recon snapshot, a tuning result) as JSON."""
        cid = self.campaign_id(campaign) if campaign else None
        cur = self.db.execute(
            "INSERT INTO analyses(campaign_id, config_id, kind, name, data_json, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (cid, config_id, kind, name, dumps(dict(data)), now()),
        )
        return int(cur.lastrowid or 0)

    def analyses(self, kind: str, campaign: str | None = None) -> list[dict[str, Any]]:
        """Stored analyses of one kind (of a campaign, or all), oldest first.

        Each is ``{"id", "campaign", "config", "name", "data", "created_at"}``."""
        sql = (
            "SELECT a.id, c.name, g.name, a.name, a.data_json, a.created_at FROM analyses a "
            "LEFT JOIN campaigns c ON c.id = a.campaign_id "
            "LEFT JOIN configs g ON g.id = a.config_id WHERE a.kind=?"
        )
        args: tuple[Any, ...] = (kind,)
        if campaign is not None:
            sql += " AND c.name=?"
            args += (campaign,)
        rows = self.db.execute(sql + " ORDER BY a.id", args).fetchall()
        return [
            {
                "id": r[0],
                "campaign": r[1],
                "config": r[2],
                "name": r[3],
                "data": json.loads(r[4]),
                "created_at": r[5],
            }
            for r in rows
        ]

    def predictions(self, campaign: str) -> list[StoredPrediction]:
        """The levers' stored predictions of a campaign (analyses ``prediction``), oldest
        first."""
        rows = self.analyses(PREDICTION, campaign)
        return [StoredPrediction.model_validate(a["data"]) for a in rows]

    def add_prediction(
        self, data: Mapping[str, Any], *, campaign: str, config_id: int | None = None
    ) -> int:
        """Store one lever's prediction (``levers.model.Lever.to_dict()`` with ``made_at``
        and ``version``), named by its ``key``."""
        return self.add_analysis(
            PREDICTION, str(data["key"]), data, campaign=campaign, config_id=config_id
        )

    def profiles(self, campaign: str) -> list[ProfileAnalysis]:
        """The stored profile analyses of a campaign, oldest first, their capture typed."""
        return [
            ProfileAnalysis(
                a["id"], a["name"], a["campaign"], a["config"], _capture(a["data"]), a["data"],
                a["created_at"],
            )
            for a in self.analyses("profile", campaign)
        ]  # fmt: skip

    def captures(self, config_id: int) -> list[ProfileCapture]:
        """The capture block of every stored profile of config row ``config_id`` (one without
        a block is left out)."""
        rows = self.db.execute(
            "SELECT data_json FROM analyses WHERE kind = 'profile' AND config_id = ?", (config_id,)
        ).fetchall()
        return [c for r in rows if (c := _capture(json.loads(r[0]))) is not None]


def _capture(data: Any) -> ProfileCapture | None:
    """A profile analysis's capture block, typed (None: the analysis has none)."""
    cap = data.get("capture") if isinstance(data, dict) else None
    return ProfileCapture.model_validate(cap) if isinstance(cap, dict) else None


def _scrubbed(kind: str, detail: Mapping[str, Any]) -> Any:
    """A verification's detail without secrets (greedy outputs, compared char by char, kept)."""
    return dict(detail) if kind == "greedy-outputs" else scrub_obj(dict(detail))

"""Test helper: the worked example of docs/design.md ("The campaign pipeline"), a new stage.

``WARMED`` sends three short completions to the live server before it is verified, says so,
and records a ``warmup`` verification with the config, whose body model (``WarmupRecord``,
registered by kind in ``store.bodies.VERIFICATIONS``: the store refuses a kind it has no model
for) lives in the same file. ``with_warmup`` is the one line that puts it in the stage table
(``campaign.stages.table.STAGES``), after the server stage."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator

from inferlab.campaign.context import ConfigContext, Stage
from inferlab.campaign.stages.files import FILES
from inferlab.campaign.stages.levers import LEVERS
from inferlab.campaign.stages.server import SERVER
from inferlab.campaign.stages.verified import VERIFIED
from inferlab.store.bodies import VERIFICATIONS, Body

__all__ = ["WARMED", "WarmupRecord", "with_warmup"]


@VERIFICATIONS.register("warmup")
class WarmupRecord(Body):
    """A ``warmup`` verification's body: how many requests warmed the server up."""

    requests: int


@contextlib.contextmanager
def _warmed(cx: ConfigContext) -> Iterator[None]:
    """Three short completions on the live server, recorded as a ``warmup`` verification."""
    body = json.dumps({"model": cx.model, "prompt": "hi", "max_tokens": 4}).encode()
    for _ in range(3):
        req = urllib.request.Request(
            cx.url + "/v1/completions", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
    cx.say(f"{cx.name}: warmed up (3 requests)")
    cx.record("warmup", True, {"requests": 3})
    yield  # code after the yield runs on the way out


WARMED = Stage("warmed", _warmed)

#: the table with the new stage: the one line of the change
with_warmup: tuple[Stage, ...] = (FILES, SERVER, WARMED, VERIFIED, LEVERS)

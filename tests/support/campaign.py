"""Test helper: campaign files written from overrides of one default campaign (the
``campaign_toml`` fixture, tests/conftest.py).

The default is a campaign of one reference-engine config, ``baseline``, that verifies nothing
and measures 4 requests of 8 tokens in, 8 out, at C=1::

    [campaign] name = "test", output = "<dir>/out"
    [engine]   kind = "sim", args = ["--ttft-ms", "2", "--itl-ms", "1"],
               ready_timeout_s = 30, stop_grace_s = 5
    [[config]] name = "baseline"
    [verify]   enabled = false
    [load]     workload = { input_tokens = 8, output_tokens = 8 }, concurrency = [1], requests = 4,
               launches = 1, max_launches = 1  (``ONE_LAUNCH``, unless ``load`` names either:
               the design's default launches more, config.campaign.DEFAULT_LAUNCHES; give
               launches=None, max_launches=None for it)

``campaign``, ``engine`` and ``load`` given update their section (a key given None is dropped);
``config`` (a list of tables), ``verify`` and any other section given (``profile``,
``cluster``, ...) replace theirs; a section given None is left out. ``name``, ``output`` and
``args`` are short for the campaign's name and output and the engine's args.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferlab.campaign.drivers.runner import CampaignResult

__all__ = [
    "DEFAULTS",
    "ONE_LAUNCH",
    "CampaignToml",
    "campaign_text",
    "toml_value",
    "write_campaign",
]

DEFAULTS: dict[str, Any] = {
    "campaign": {"name": "test"},
    "engine": {
        "kind": "sim",
        "args": ["--ttft-ms", "2", "--itl-ms", "1"],
        "ready_timeout_s": 30,
        "stop_grace_s": 5,
    },
    "config": [{"name": "baseline"}],
    "verify": {"enabled": False},
    "load": {
        "workload": {"input_tokens": 8, "output_tokens": 8},
        "concurrency": [1],
        "requests": 4,
    },
}
#: the design of a test campaign that names neither ``launches`` nor ``max_launches`` in its
#: ``load``: one launch a config (the default design launches more: DEFAULT_LAUNCHES)
ONE_LAUNCH = {"launches": 1, "max_launches": 1}
#: the ``campaign_toml`` fixture's type: ``campaign_toml(file="c.toml", **overrides) -> Path``
CampaignToml = Callable[..., Path]

#: sections a given value updates (the others it replaces)
MERGED = ("campaign", "engine", "load")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_value(v: Any) -> str:
    """``v`` as a TOML value: strings (and paths) basic-quoted, lists, inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str | Path):
        return json.dumps(str(v)).replace("\x7f", "\\u007f")
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else json.dumps(k)


def _table(name: str, body: Mapping[str, Any], header: str = "[{}]") -> str:
    lines = [header.format(name)] + [f"{_key(k)} = {toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def _sections(out: Path, overrides: Mapping[str, Any]) -> dict[str, Any]:
    over = dict(overrides)
    short = {
        "name": ("campaign", "name"),
        "output": ("campaign", "output"),
        "args": ("engine", "args"),
    }
    sections: dict[str, Any] = {
        k: (dict(v) if isinstance(v, dict) else v) for k, v in DEFAULTS.items()
    }
    sections["campaign"] = {**sections["campaign"], "output": out}
    for key, (section, field) in short.items():
        if key in over:
            over.setdefault(section, {})
            over[section] = {**over[section], field: over.pop(key)}
    load = over.get("load")
    if load is not None and not {"launches", "max_launches"} & set(load):
        over["load"] = {**ONE_LAUNCH, **load}
    elif "load" not in over:
        over["load"] = dict(ONE_LAUNCH)
    for name, given in over.items():
        if given is None:
            sections.pop(name, None)
        elif name in MERGED:
            merged = {**sections.get(name, {}), **given}
            sections[name] = {k: v for k, v in merged.items() if v is not None}
        else:
            sections[name] = given
    return sections


def campaign_text(out: Path, **overrides: Any) -> str:
    """The TOML of the default campaign with ``overrides`` (module docstring); its output
    directory is ``out`` unless ``output`` says otherwise."""
    parts = []
    for name, body in _sections(out, overrides).items():
        if name == "config":
            parts += [_table("config", c, "[[{}]]") for c in body]
        else:
            parts.append(_table(name, body))
    return "\n".join(parts)


def write_campaign(path: Path, **overrides: Any) -> Path:
    """``campaign_text`` written to ``path`` (its output directory beside it, ``out/``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(campaign_text(path.parent / "out", **overrides), encoding="utf-8")
    return path


def run_and_read(
    path: Path, db: Path, campaign: str
) -> tuple[CampaignResult, list[tuple[Any, ...]], str]:
    """Run the campaign at ``path`` into ``db``; its outcome, every stored verification row
    ``(config, kind, passed, detail_json)`` in order, and its report's Markdown."""
    from inferlab.campaign.drivers.runner import run_campaign
    from inferlab.report.render import build_report, render_markdown
    from inferlab.store import Store

    with Store(db) as store:
        res = run_campaign(path, store=store)
        rows = store.db.execute(
            "SELECT g.name, v.kind, v.passed, v.detail_json FROM verifications v "
            "JOIN configs g ON g.id = v.config_id ORDER BY v.id"
        ).fetchall()
        page = render_markdown(build_report(store, campaign))
    return res, rows, page

"""``inferlab verify``: prove a running endpoint answers correctly before measuring it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from inferlab.campaign.drivers.up import find_config
from inferlab.campaign.parts.files import pending_manifests
from inferlab.campaign.parts.plan import baseline_of
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.campaign.stages.levers import check_applied
from inferlab.config.bench import validation_message
from inferlab.config.campaign import Probe, VerifySection, load_campaign
from inferlab.engines import get_engine
from inferlab.errors import ConfigError
from inferlab.load.detect import detect_engine
from inferlab.store import Store, db_path
from inferlab.verify import GreedyOutputs, verify_endpoint
from inferlab.verify.checks import default_probes

from .options import CampaignOpt, DbOpt, campaign_file
from .render import stdout_console


def _probe(text: str) -> Probe:
    prompt, sep, regex = text.partition("::")
    if not sep:
        raise ConfigError(f"--probe: expected 'PROMPT::REGEX', got {text!r}")
    try:
        return Probe(prompt=prompt, expect=regex)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, "--probe")) from None


def _reference(against: str | None, campaign: str, db: Path | None) -> GreedyOutputs | None:
    if against is None:
        return None
    with Store(db_path(db)) as store:
        ref = store.latest_verification(campaign, against, "greedy-outputs")
    if ref is None:
        raise ConfigError(
            f"--against: no stored greedy outputs for config {against!r} in campaign "
            f"{campaign!r}; run inferlab verify --save-as {against} on that server first"
        )
    return GreedyOutputs.from_json(ref.to_json())


def _levers(url: str, which: str, log: Path | None, con: Console) -> bool:
    """``--levers CAMPAIGN:CONFIG``: did CONFIG's diff against the campaign's baseline take effect
    on this server (its launch log, /get_server_info, /metrics)? True when none is ✗."""
    given, sep, name = which.rpartition(":")
    if not sep or not given:
        raise ConfigError(f"--levers: expected CAMPAIGN:CONFIG, got {which!r}")
    path = str(campaign_file(given))
    configs = resolve_configs(load_campaign(path), Path(path), Path(path).read_text("utf-8"))
    cfg = find_config(configs, name, Path(path))
    pending = {p.config: p for p in pending_manifests(load_campaign(path).output_dir)}
    items = check_applied(
        baseline_of(configs),
        cfg,
        url=url.rstrip("/"),
        log_path=log,
        installed=pending.get(cfg.name),
        store=None,
        config_id=None,
        say=lambda line: con.print(escape(line), highlight=False),
    )
    return all(i.status != "not-applied" for i in items)


_LeversOpt = Annotated[
    str | None,
    typer.Option(
        metavar="CAMPAIGN:CONFIG",
        help="Check CONFIG's levers against the campaign's baseline took effect (CAMPAIGN: "
        "its file, or its name where NAME.toml is here)",
    ),
]


def verify(
    url: Annotated[str, typer.Option("--url", help="Base URL of the running server")],
    model: Annotated[str, typer.Option(help="Model name as served")],
    engine: Annotated[
        str | None,
        typer.Option(help="Engine kind (fixed-length fields); default: detected from the server"),
    ] = None,
    probe: Annotated[
        list[str] | None, typer.Option("--probe", help="'PROMPT::REGEX' (repeatable)")
    ] = None,
    no_default_probes: Annotated[
        bool, typer.Option("--no-default-probes", help="Skip the built-in probes")
    ] = False,
    against: Annotated[
        str | None, typer.Option(help="Config whose stored greedy outputs must be matched")
    ] = None,
    save_as: Annotated[
        str | None, typer.Option(help="Store this server's greedy outputs as CONFIG's")
    ] = None,
    campaign: CampaignOpt = "bench",
    db: DbOpt = None,
    levers: _LeversOpt = None,
    log: Annotated[Path | None, typer.Option(help="The server's launch log (for --levers)")] = None,
) -> None:
    """Check that a running server answers correctly before it is measured.

    Smoke probes, output length, stream form, (with --against) greedy equivalence and (with
    --levers) lever-applied evidence; --against and --save-as read and store in --campaign.
    Exit code 1 when a check fails."""
    con = stdout_console()
    if engine is None:
        found = detect_engine(url)
        con.print(escape(found.sentence()), highlight=False)
        engine = found.engine
    probes = [] if no_default_probes else default_probes(get_engine(engine))
    probes += [_probe(p) for p in probe or []]
    section = VerifySection(probes=probes, equivalent_to=against or save_as)
    reference = _reference(against, campaign, db)
    report = verify_endpoint(
        url, model=model, engine=get_engine(engine), section=section, reference=reference
    )
    for c in report.checks:
        mark = "[green]ok[/green]" if c.passed else "[red]FAILED[/red]"
        con.print(f"{mark} {c.kind}: {escape(c.message)}", highlight=False)
    if save_as is not None and report.outputs is not None:
        with Store(db_path(db)) as store, store.transaction():
            cid = store.campaign_id(campaign)
            gid = store.config_id(cid, save_as, engine=engine, model=model, extra={"url": url})
            store.add_verification(gid, "greedy-outputs", report.passed, report.outputs.to_json())
            for c in report.checks:
                store.add_verification(gid, c.kind, c.passed, c.to_json())
        con.print(f"greedy outputs stored as {escape(save_as)}'s reference", highlight=False)
    applied = _levers(url, levers, log, con) if levers else True
    if not report.passed or not applied:
        raise typer.Exit(1)

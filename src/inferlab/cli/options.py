"""The options and arguments several ``inferlab`` commands share, each declared once.

One spelling, one meaning and one help text each (tests/unit/cli/test_vocabulary.py walks every
command and holds them to it).

The vocabulary:

- ``CAMPAIGN`` (the first argument of a command that acts on one campaign, ``--campaign``
  where a command stores or reads runs of one): a campaign file (``.toml``/``.yaml``) or the
  name of a stored campaign, resolved by :func:`campaign_name` / :func:`campaign_file`;
- ``--config CONFIG``: selects configs of a campaign; ``--as CONFIG``: the config name a
  command stores under;
- ``--format``: what a command prints (``table`` for people; ``json``, ``csv``, ``md``, …
  for programs), its values from :data:`FORMATS`;
- ``--out FILE`` a file, ``--out-dir DIR`` a directory; ``--db`` the store.

An old spelling stays for one release as a hidden option; giving it prints one line on stderr
naming the new one (:func:`deprecated`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer

from inferlab.errors import ConfigError

__all__ = [
    "CAMPAIGN_SUFFIXES",
    "FORMATS",
    "AsAlias",
    "AsOpt",
    "CampaignArg",
    "CampaignFileArg",
    "CampaignOpt",
    "CampaignScopeOpt",
    "CompareFormatOpt",
    "ConfigOpt",
    "ConfigsOpt",
    "DbOpt",
    "DryRunOpt",
    "ExportFormatOpt",
    "JsonAlias",
    "NoVerifyOpt",
    "OutDirAlias",
    "OutDirOpt",
    "RayOpt",
    "ResumeOpt",
    "TableJsonFormatOpt",
    "campaign_file",
    "campaign_name",
    "deprecated",
    "output_format",
    "pick",
]

#: every value ``--format`` takes anywhere; a command offers the ones it can print
FORMATS = ("table", "md", "json", "csv", "jsonl", "parquet")
#: the suffixes that make a CAMPAIGN a file rather than a stored name
CAMPAIGN_SUFFIXES = (".toml", ".yaml", ".yml")

OUTPUT, STORE, RUN = "Output", "Store", "Run"

T = TypeVar("T")


def deprecated(old: str, new: str) -> None:
    """The one line an old spelling prints on stderr: what to type instead."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(
        f"[yellow]deprecated:[/yellow] {escape(old)} is now {escape(new)} "
        "(the old spelling goes in the next release)",
        highlight=False,
        soft_wrap=True,
    )


def _alias(old: str, new: str) -> Any:
    """A hidden option that keeps the old spelling ``old`` of ``new``."""
    return typer.Option(old, hidden=True, help=f"deprecated: use {new}")


def pick(new: T | None, old: T | None, old_flag: str, new_flag: str) -> T | None:
    """The new option's value, or the old spelling's (with its deprecation line)."""
    if old is None:
        return new
    deprecated(old_flag, new_flag)
    if new is not None and new != old:
        raise ConfigError(f"{new_flag} and {old_flag}: give one (the second is its old name)")
    return old


def output_format(fmt: str, json_alias: bool) -> str:
    """``--format``, or ``json`` when the old ``--json`` is given (with its deprecation line)."""
    if not json_alias:
        return fmt
    deprecated("--json", "--format json")
    return "json"


# ------------------------------------------------------------------------------ CAMPAIGN

CAMPAIGN_HELP = "A campaign file (.toml, .yaml) or the name of a campaign in the store"


def _is_file(value: str) -> bool:
    """A CAMPAIGN that names a file (by its suffix, as campaign files are read by it)."""
    return value.lower().endswith(CAMPAIGN_SUFFIXES)


def campaign_name(value: str) -> str:
    """CAMPAIGN as the name runs are stored under: a file's ``[campaign] name``, else as given."""
    if not _is_file(value):
        return value
    from inferlab.config.campaign import load_campaign

    if not Path(value).is_file():
        raise ConfigError(f"CAMPAIGN: {value}: no such campaign file")
    return load_campaign(value).campaign.name


def campaign_file(value: str) -> Path:
    """CAMPAIGN as a campaign file: the path given, or the file in the working directory
    (``NAME.toml``, ``NAME.yaml``, ``NAME.yml``, or the one whose ``[campaign] name`` is NAME)."""
    path = Path(value)
    if path.is_file():
        return path
    if _is_file(value):
        raise ConfigError(f"CAMPAIGN: {value}: no such campaign file")
    for suffix in CAMPAIGN_SUFFIXES:
        if path.with_name(path.name + suffix).is_file():
            return path.with_name(path.name + suffix)
    from inferlab.config.campaign import load_campaign

    for found in sorted(p for s in CAMPAIGN_SUFFIXES for p in Path.cwd().glob("*" + s)):
        try:
            if load_campaign(found).campaign.name == value:
                return found
        except ConfigError:
            continue
    raise ConfigError(
        f"CAMPAIGN: {value!r} is no campaign file, and no {value}.toml/.yaml here or file in "
        f"{Path.cwd()} names a campaign {value!r}; this command needs the campaign's file"
    )


def _file_callback(value: str) -> str:
    return str(campaign_file(value))


def _name_callback(value: str | None) -> str | None:
    return None if value is None else campaign_name(value)


#: the campaign a command acts on, needed as its file (``run``, ``optimize``, ``up``, ``down``)
CampaignFileArg = Annotated[
    str,
    typer.Argument(metavar="CAMPAIGN", help=CAMPAIGN_HELP, callback=_file_callback),
]
#: the campaign a command acts on, as the stored name (``report``, ``levers``)
CampaignArg = Annotated[
    str, typer.Argument(metavar="CAMPAIGN", help=CAMPAIGN_HELP, callback=_name_callback)
]
_CAMPAIGN = typer.Option(
    "--campaign",
    metavar="CAMPAIGN",
    help=CAMPAIGN_HELP,
    callback=_name_callback,
    rich_help_panel=STORE,
)
#: ``--campaign`` where a command stores under one (it has a default name)
CampaignOpt = Annotated[str, _CAMPAIGN]
#: ``--campaign`` where a command reads one or stores under one only when it is given
CampaignScopeOpt = Annotated[str | None, _CAMPAIGN]

# ------------------------------------------------------------------------------ configs

#: ``--config``: only these configs (repeatable)
ConfigsOpt = Annotated[
    list[str] | None,
    typer.Option("--config", metavar="CONFIG", help="Only this config (repeatable; default: all)"),
]
#: ``--config``: only this config
ConfigOpt = Annotated[
    str | None, typer.Option("--config", metavar="CONFIG", help="Only this config")
]
#: ``--as``: the config name the results are stored under
AsOpt = Annotated[
    str | None,
    typer.Option(
        "--as",
        metavar="CONFIG",
        help="Store under this config name (default: named from what ran and the model)",
        rich_help_panel=STORE,
    ),
]
#: the old spelling of ``--as``
AsAlias = Annotated[str | None, _alias("--config", "--as")]

# ------------------------------------------------------------------------------ output

TableJsonFormatOpt = Annotated[
    Literal["table", "json"],
    typer.Option(
        "--format", help="What to print: table (for people) or json", rich_help_panel=OUTPUT
    ),
]
CompareFormatOpt = Annotated[
    Literal["table", "md", "json", "csv"],
    typer.Option(
        "--format",
        help="What to print: table (for people), md, json or csv",
        rich_help_panel=OUTPUT,
    ),
]
ExportFormatOpt = Annotated[
    Literal["csv", "jsonl", "parquet"] | None,
    typer.Option("--format", help="The file's format (default: by --out's suffix)"),
]
#: the old spelling of ``--format json``
JsonAlias = Annotated[bool, _alias("--json", "--format json")]
OutDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out-dir", metavar="DIR", help="Directory to write into", rich_help_panel=OUTPUT
    ),
]
#: the old spelling of ``--out-dir``
OutDirAlias = Annotated[Path | None, _alias("--out", "--out-dir")]

#: ``--db``: the store a command reads or writes
DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db", help="Database (default $INFERLAB_DB or ./inferlab.db)", rich_help_panel=STORE
    ),
]

# ------------------------------------------------------------------------------ running

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the plan, run nothing")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue: skip what is stored")]
NoVerifyOpt = Annotated[bool, typer.Option("--no-verify", help="Skip verification")]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="On a Ray cluster: HOST:PORT, auto or local",
        rich_help_panel=RUN,
    ),
]

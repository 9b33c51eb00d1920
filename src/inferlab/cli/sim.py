"""``inferlab sim ...``: the reference engine (placeholder until the sim lands)."""

from __future__ import annotations

import typer

sim_app = typer.Typer(help="The reference engine: an OpenAI-compatible server with known timing.")

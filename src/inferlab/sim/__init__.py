"""The reference engine: an OpenAI-compatible server whose timing is known exactly (SIMULATED)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.sim.clock import back_to_back, on_model_clock
    from inferlab.sim.config import SimConfig
    from inferlab.sim.inprocess import SimThread, serve_config
    from inferlab.sim.launch import LEVER_FIELDS, config_from_options, run_engine
    from inferlab.sim.tokenizer import WordTokenizer

__all__ = [
    "LEVER_FIELDS",
    "SimConfig",
    "SimThread",
    "WordTokenizer",
    "back_to_back",
    "config_from_options",
    "on_model_clock",
    "run_engine",
    "serve_config",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.sim.clock": ("back_to_back", "on_model_clock"),
        "inferlab.sim.config": ("SimConfig",),
        "inferlab.sim.inprocess": ("SimThread", "serve_config"),
        "inferlab.sim.launch": ("LEVER_FIELDS", "config_from_options", "run_engine"),
        "inferlab.sim.tokenizer": ("WordTokenizer",),
    },
)

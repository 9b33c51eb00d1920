"""llama.cpp's log lines (``llama-server``): startup steps and a slot's new prompt."""

from __future__ import annotations

import re

from inferlab.logs.formats.base import Field, LineFormat, i_, s_, step

__all__ = ["FORMATS", "MARKERS"]

E = "llamacpp"
#: names in a line that hint at llama.cpp (weak evidence, used when no format read the line)
MARKERS = ("llama_", "llama-server", "ggml_")

# left unformatted: a table, one launch step a row (name, needle, pattern, next phase, fields)
_STEPS = (
    step(E, "listening", "HTTP server is listening",
         r"HTTP server is listening, hostname: (?P<host>\S+), port: (?P<port>\d+)", None,
         s_("host"), i_("port", "")),
    step(E, "ready", "server is listening on", r"server is listening on (?P<url>\S+)", "serving",
         s_("url")),
    step(E, "ready", "llama_server: listening on", r"llama_server: listening on (?P<url>\S+)",
         "serving", s_("url")),
    step(E, "weights-loading", "load_model: loading model",
         r"load_model: loading model '(?P<model>[^']+)'", "weight-loading", s_("model")),
    step(E, "device", "llama_model_load_from_file_impl: using device",
         r"llama_model_load_from_file_impl: using device (?P<device>\S+) \((?P<name>[^)]+)\) - "
         r"(?P<free_mib>\d+) MiB free", None, s_("device"), s_("name"), i_("free_mib", "MiB")),
    step(E, "model-metadata", "llama_model_loader: loaded meta data",
         r"llama_model_loader: loaded meta data with (?P<keys>\d+) key-value pairs and "
         r"(?P<tensors>\d+) tensors", "weight-loading", i_("keys", ""), i_("tensors", "")),
    step(E, "slots-idle", "all slots are idle", r"update_slots: all slots are idle", "serving"),
)  # fmt: skip

#: a slot takes a new prompt (kind ``slot``): a prompt longer than the slot's context overflows
_SLOT = LineFormat(
    "llamacpp-slot-prompt",
    E,
    "slot",
    ("n_ctx_slot",),
    (
        Field("slot", int, ""),
        Field("task", int, ""),
        Field("n_ctx_slot", int, "tokens"),
        Field("n_prompt_tokens", int, "tokens"),
    ),
    re.compile(
        r"slot update_slots: id +(?P<slot>\d+) \| task (?P<task>-?\d+) \| new prompt, "
        r"n_ctx_slot = (?P<n_ctx_slot>\d+), n_keep = \d+, "
        r"n_prompt_tokens = (?P<n_prompt_tokens>\d+)"
    ),
)

FORMATS: tuple[LineFormat, ...] = (*_STEPS, _SLOT)

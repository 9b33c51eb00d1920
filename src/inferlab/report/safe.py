"""What makes text from servers, logs and files safe to show besides escaping its markup."""

from __future__ import annotations

import re

__all__ = ["BIDI_CONTROLS", "show_controls"]

#: characters that reorder the text around them (Trojan Source, CVE-2021-42574): shown as
#: their code point, never obeyed
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def show_controls(text: str) -> str:
    """``text`` with every bidi control replaced by a visible ``⟦U+202E⟧``."""
    return _BIDI.sub(lambda m: f"⟦U+{ord(m.group()):04X}⟧", text)

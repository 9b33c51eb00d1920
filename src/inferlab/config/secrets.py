"""Removing secrets from argv and environment before anything is stored or shown."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["REDACTED", "is_secret_name", "scrub_argv", "scrub_env"]

REDACTED = "<redacted>"
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True for names like ``HF_TOKEN``, ``OPENAI_API_KEY``, ``--api-key``."""
    return bool(_SECRET.search(name))


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment with the values of secret-looking variables replaced."""
    return {k: (REDACTED if is_secret_name(k) else v) for k, v in env.items()}


def scrub_argv(argv: Sequence[str]) -> list[str]:
    """argv with the values of secret-looking flags replaced (``--api-key X``, ``--token=X``)."""
    out: list[str] = []
    hide_next = False
    for a in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if a.startswith("-"):
            name, eq, _ = a.partition("=")
            if is_secret_name(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(a)
                    hide_next = True
                continue
        out.append(a)
    return out

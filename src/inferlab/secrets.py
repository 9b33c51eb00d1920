"""Removing secrets from argv, environment and text before anything is stored or shown.

Secrets are found by the exact names that carry them, never by a substring (``--max-num-
batched-tokens`` and ``--tokenizer`` are levers, not secrets), and by values that look like a
key whatever their name:

- flags: ``--api-key``, ``--hf-token``, ``--token``, ``--password``, ``--secret*``,
  ``--*-api-key``, ``--*-password`` (``--ssl-keyfile-password``); ``_`` and ``-`` alike;
- variables: ``*_API_KEY``, ``*_TOKEN`` (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``,
  ``GITHUB_TOKEN``), ``*_SECRET*``, ``*PASSWORD*``, ``AWS_*KEY*`` (and the bare ``API_KEY``,
  ``TOKEN``, ``SECRET``);
- values: ``sk-…``, ``hf_…``, ``ghp_…``/``github_pat_…``, ``xox?-…``, ``AKIA…``, ``Bearer …``,
  and 32+ hex/base64 characters given to a key-like flag (``--*key*``, ``--*token*`` but not
  ``--*tokens*``/``--tokenizer*``, ``--*auth*``, ``--*secret*``, ``--*credential*``).

The flag and field lists were checked against every flag of vLLM's CPU build (``--help=all``)
and every field of SGLang's ``ServerArgs`` (``tests/fixtures/levers/``): none of their
non-secret flags is hidden.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "REDACTED",
    "is_secret_flag",
    "is_secret_name",
    "is_secret_var",
    "looks_secret",
    "scrub_argv",
    "scrub_env",
    "scrub_obj",
    "scrub_text",
]

REDACTED = "<redacted>"

_FLAG = re.compile(
    r"--(?:api-key|hf-token|token|password|secret[a-z0-9-]*|[a-z0-9-]+-api-key|[a-z0-9-]+-password)"
)
_VAR = re.compile(
    r"(?:\w+_)?API_KEY|(?:\w+_)?TOKEN|(?:\w+_)?SECRET\w*|\w*PASSWORD\w*|AWS_\w*KEY\w*",
    re.IGNORECASE,
)
_KEYLIKE = re.compile(r"key|token(?!s|iz)|auth|secret|credential|passw", re.IGNORECASE)
_TOKEN_VALUE = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})"
    r"|(?<=Bearer )[A-Za-z0-9._~+/=-]{8,}"
)
_OPAQUE = re.compile(
    r"[0-9a-fA-F]{32,}|(?=[A-Za-z0-9_+=-]*\d)(?=[A-Za-z0-9_+=-]*[A-Za-z])"
    r"[A-Za-z0-9_+=-]{32,}"
)


def _flag_form(name: str) -> str:
    return "--" + name.lstrip("-").lower().replace("_", "-")


def is_secret_flag(flag: str) -> bool:
    """True for a flag whose value is a secret (``--api-key``, ``--admin_api_key``...)."""
    return _FLAG.fullmatch(_flag_form(flag)) is not None


def is_secret_var(name: str) -> bool:
    """True for an environment variable that carries a secret (``HF_TOKEN``, ...)."""
    return _VAR.fullmatch(name) is not None


def is_secret_name(name: str) -> bool:
    """A flag (``--x``), a variable (``UPPER_CASE``) or a field (``lower_case``, as in
    SGLang's ``ServerArgs`` or a JSON key) that carries a secret."""
    if name.startswith("-"):
        return is_secret_flag(name)
    if name.isupper():
        return is_secret_var(name)
    return is_secret_flag(name)


def looks_secret(value: str, name: str = "") -> bool:
    """True when ``value`` looks like a key or token by itself, or (given to a key-like
    ``name``) is an opaque 32+ character hex/base64 string."""
    if _TOKEN_VALUE.search(value):
        return True
    return bool(name) and bool(_KEYLIKE.search(name)) and _OPAQUE.fullmatch(value) is not None


def _hide_tokens(text: str) -> str:
    return _TOKEN_VALUE.sub(REDACTED, text)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment with the values of secret variables (and secret-looking values)
    replaced."""
    return {k: (REDACTED if is_secret_var(k) or looks_secret(v, k) else v) for k, v in env.items()}


def scrub_argv(argv: Sequence[str]) -> list[str]:
    """argv with the values of secret flags replaced (``--api-key X Y``, ``--token=X``), and
    any value that looks like a key; every other flag and value is kept as given."""
    out: list[str] = []
    hiding = False  # inside the values of a secret flag (nargs: until the next flag)
    last_flag = ""
    for a in argv:
        if a.startswith("-") and len(a) > 1 and not a[1:2].isdigit():
            name, eq, value = a.partition("=")
            hiding = False
            last_flag = name
            if is_secret_flag(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(a)
                    hiding = True
            elif eq and looks_secret(value, name):
                out.append(f"{name}={REDACTED}")
            else:
                out.append(_hide_tokens(a))
            continue
        if hiding or looks_secret(a, last_flag):
            out.append(REDACTED)
        else:
            out.append(a)
    return out


# --name value / --name=value (flags), and name=value / name: value / 'name': 'value' (fields,
# variables, JSON keys); a value never starts with "-" (that is the next flag)
_VALUE = r"""(?P<value>'[^']*'|"[^"]*"|[^\s,)}\]'"-][^\s,)}\]'"]*)"""
_FLAG_ARG = re.compile(r"(?P<name>--[A-Za-z][\w-]*)(?P<sep>=|\s+)" + _VALUE)
_ASSIGN = re.compile(
    r"""(?<![\w-])(?P<q>['"]?)(?P<name>[A-Za-z_][\w]*)(?P=q)(?P<sep>\s*[=:]\s*)""" + _VALUE
)


def _sub(m: re.Match[str]) -> str:
    name, value = m.group("name"), m.group("value")
    bare = value.strip("'\"")
    if bare in ("None", "null", "", "True", "False"):
        return m.group(0)
    if not (is_secret_name(name) or looks_secret(bare, name)):
        return m.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return m.group(0)[: m.start("value") - m.start()] + quote + REDACTED + quote


def scrub_text(text: str) -> str:
    """Free text (a log line, an error message, an args dump) with secret values replaced:
    ``api_key='…'``, ``"HF_TOKEN": "…"``, ``--api-key …``, and key-looking values anywhere."""
    return _hide_tokens(_ASSIGN.sub(_sub, _FLAG_ARG.sub(_sub, text)))


def scrub_obj(obj: Any, name: str = "") -> Any:
    """A JSON-like value with every secret removed: values under a secret key (``api_key``,
    ``HF_TOKEN``) replaced, strings scrubbed as text, argv-like lists as argv."""
    if isinstance(obj, Mapping):
        return {
            k: (REDACTED if is_secret_name(str(k)) and v not in (None, "") else scrub_obj(v, k))
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, str) for x in obj) and any(x.startswith("--") for x in obj):
            return scrub_argv(list(obj))
        return [scrub_obj(x, name) for x in obj]
    if isinstance(obj, str):
        return REDACTED if looks_secret(obj, name) else scrub_text(obj)
    return obj

"""URLs as they may be stored or shown: the password of a URL's userinfo never is."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url"]

REDACTED = "<redacted>"


def redact_url(url: str) -> str:
    """``url`` with the password of its userinfo replaced (``http://u:<redacted>@host/``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL urllib can split: nothing is known to be a password
        return url
    if password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{REDACTED}@{host}"))

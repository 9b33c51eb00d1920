"""Where a server runs: ``engine.host`` is ``local`` (also ``localhost`` or empty) or an ssh
target (``user@host``). The one definition every launch, stop, file and recon path reads."""

from __future__ import annotations

__all__ = ["LOCAL_HOSTS", "is_local_host"]

#: the ``engine.host`` values that mean "this machine, no ssh"
LOCAL_HOSTS = ("local", "localhost", "")


def is_local_host(host: str) -> bool:
    """Whether ``host`` (an ``engine.host`` value) is this machine rather than an ssh target."""
    return host in LOCAL_HOSTS

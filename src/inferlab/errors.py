"""The one exception tree of inferlab.

::

    InferlabError                 anything the user can act on; the CLI prints it, exit code 2
    ├── ConfigError               bad input: a file, a field, an option (names where and what)
    ├── ConnectError              the server under test cannot be reached
    ├── ServerRejected            the server refused the first requests (4xx): its own message
    ├── MeasurementError          the measuring client failed (a worker died): the point is lost
    ├── TokenizerError            no tokenizer, or one that cannot make the requested lengths
    ├── StoreError                the database is locked, corrupt, foreign or too new
    ├── LaunchError               a server config failed to start: classified, with remedy and log
    ├── VerifyError               a server answered, but not correctly
    ├── NotComparable             a comparison refused: the differing fields are named
    ├── SimError                  the reference engine could not start or serve
    ├── LogError                  a log cannot be mined: binary, foreign compression, unreadable
    ├── TraceError                a profiler trace is truncated, invalid or has no GPU activity
    └── TuneError                 kernel tuning cannot run (no GPU stack) or lost/failed a cell

Faults of a server *during* a measurement are not exceptions: they are recorded on the
request (``RequestRecord.error_kind``) and counted, never raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from inferlab.secrets import scrub_text

__all__ = [
    "ConfigError",
    "ConnectError",
    "InferlabError",
    "LaunchError",
    "LogError",
    "MeasurementError",
    "NotComparable",
    "ServerRejected",
    "SimError",
    "StoreError",
    "TokenizerError",
    "TraceError",
    "TuneError",
    "VerifyError",
    "lookup",
]

_T = TypeVar("_T")


class InferlabError(Exception):
    """Base of every error inferlab raises on purpose."""


class ConfigError(InferlabError):
    """Bad user input; the message names the file, line or field and what was expected."""


class ConnectError(InferlabError):
    """The endpoint cannot be reached (refused, DNS, timeout)."""


class ServerRejected(InferlabError):
    """The server rejected the first requests of a load point; carries its own message."""


class TokenizerError(InferlabError):
    """A tokenizer is missing or cannot produce the requested prompt length."""


class SimError(InferlabError):
    """The reference engine failed to start or serve."""


class StoreError(InferlabError):
    """The database cannot be used: locked, corrupt, not inferlab's, or newer than this code."""


class NotComparable(InferlabError):
    """Runs differ in a field that makes a delta meaningless (model, GPU, workload, ...)."""


class LaunchError(InferlabError):
    """A server failed to become ready. ``kind`` classifies it (e.g. ``cuda-oom-graph-capture``,
    ``address-in-use``, ``exited``, ``ready-timeout``); ``remedy`` says what to change. The
    message and the log tail come from the server's log: secrets in them are redacted here."""

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        remedy: str | None = None,
        log_path: object = None,
        tail: list[str] | None = None,
    ) -> None:
        super().__init__(scrub_text(message))
        self.kind = kind
        self.remedy = remedy
        self.log_path = log_path
        self.tail = [scrub_text(line) for line in tail or []]


class VerifyError(InferlabError):
    """Verification failed: a probe did not match, outputs diverged, a stream was malformed."""


class MeasurementError(InferlabError):
    """The measuring client failed (a worker process died or broke): the point was not measured."""


class LogError(InferlabError):
    """A log cannot be mined: missing, binary, or compressed other than gzip (names the file)."""


class TraceError(InferlabError):
    """A profiler trace cannot be analyzed: truncated, invalid JSON (file and byte offset named),
    not a trace, or without GPU activity."""


class TuneError(InferlabError):
    """Kernel tuning cannot run (no torch/triton/CUDA GPU) or produced no usable result for a
    cell (every config failed its reference check, a device process lost its cells)."""


def lookup(table: Mapping[str, _T], name: str, message: str, known: Iterable[str] = ()) -> _T:
    """``table[name]``; for an unknown name a ``ConfigError`` of ``message`` with ``{name}`` (its
    repr) and ``{known}`` (``known`` comma-joined, or the table's keys in order) filled in."""
    try:
        return table[name]
    except KeyError:
        names = ", ".join(known or table)
        raise ConfigError(message.format(name=repr(name), known=names)) from None

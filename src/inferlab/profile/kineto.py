"""Streaming reader of PyTorch profiler (Kineto) Chrome traces, ``.json`` or ``.json.gz``.

Two parsers, one result:

* the fast path reads the file in 8 MiB blocks, cuts them at Kineto's event separator
  (``\\n  },\\n  {``: a raw newline never occurs inside a JSON string) and parses with
  ``json.loads`` only the events whose text holds a wanted category; a wrong cut cannot go
  unnoticed, since the piece then fails to parse;
* anything the fast path cannot vouch for (another layout, a piece that does not parse, no
  closing bracket) restarts the read with the general parser, which decodes every event with
  ``json.JSONDecoder.raw_decode`` over a sliding window and names the byte offset of any error.

Both keep only kernel, memcpy, memset, CUDA runtime/driver and user-annotation events, plus
``deviceProperties`` (SM count). Times are µs, as Kineto writes them."""

from __future__ import annotations

import gzip
import json
import json.scanner
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from inferlab.errors import TraceError

from .jsonwindow import BLOCK, Window
from .trace import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, GpuRange, Trace, TraceBuilder

__all__ = ["read_kineto"]

SEP = b"\n  },\n  {"
_WANTED_S = re.compile(
    r'"(kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver|gpu_user_annotation|'
    r'user_annotation|Kernel|Memcpy|Memset|Runtime|Driver)"'
)
#: CPU mode (a trace without GPU ops): the worker's operators and annotations
_WANTED_CPU = re.compile(r'"(cpu_op|user_annotation)"')
#: top-level keys kept as the trace's metadata (the sim's SIMULATED mark, engine versions)
_META_KEYS = ("inferlab", "vllm_version", "sglang_version")
#: category (any case, old Kineto names too) → what it is
_CATS = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_runtime": "launch",
    "runtime": "launch",
    "cuda_driver": "launch",
    "driver": "launch",
    "gpu_user_annotation": "gpu_range",
    "user_annotation": "cpu_range",
    "cpu_op": "cpu_op",
}


class _Fallback(Exception):
    """The fast path cannot vouch for this file: use the general parser."""


def _open(path: Path) -> IO[bytes]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    magic = fh.read(2)
    fh.seek(0)
    if magic == b"\x1f\x8b":
        fh.close()  # a GzipFile given a fileobj never closes it: this one owns its file
        return gzip.GzipFile(path, mode="rb")  # type: ignore[return-value]
    return fh


def _reader(path: Path, fh: IO[bytes]) -> Callable[[int], bytes]:
    """``read(n)`` that turns decompression faults into a ``TraceError`` naming the offset."""
    pos = 0

    def read(n: int) -> bytes:
        nonlocal pos
        try:
            b = fh.read(n)
        except EOFError as exc:
            raise TraceError(
                f"{path}: truncated gzip: the compressed stream ends after {pos:,} "
                "uncompressed bytes (was the profiler killed while writing?); nothing was "
                "analyzed, since Kineto does not write events in time order"
            ) from exc
        except (OSError, zlib.error) as exc:
            raise TraceError(f"{path}: corrupt gzip after {pos:,} bytes: {exc}") from exc
        pos += len(b)
        return b

    return read


def _take(b: TraceBuilder, ev: Any, devices: dict[int, tuple[int, str]]) -> None:
    if type(ev) is not dict:
        return
    cat = ev.get("cat")
    if cat == "cuda_runtime" or cat == "cuda_driver":  # the most frequent: a shortcut
        ts, dur, args = ev.get("ts"), ev.get("dur"), ev.get("args")
        if type(ts) is float and type(dur) is float and type(args) is dict and ev.get("ph") == "X":
            corr = args.get("correlation", -1)
            b.launch(str(ev.get("name", "?")), ts, dur, corr if type(corr) is int else -1)
            return
    _take_any(b, ev, devices)


def _take_any(b: TraceBuilder, ev: dict[str, Any], devices: dict[int, tuple[int, str]]) -> None:
    cat = ev.get("cat")
    what = _CATS.get(cat.lower()) if isinstance(cat, str) else None
    if what is None or ev.get("ph", "X") != "X":
        return
    try:
        ts = float(ev["ts"])
        dur = float(ev.get("dur", 0.0))
    except (KeyError, TypeError, ValueError):
        b.warnings.append(f"{b.path}: a {cat} event without a numeric ts/dur was skipped")
        return
    name = str(ev.get("name", "?"))
    tid = ev.get("tid")
    tid = tid if type(tid) is int else -1
    if what == "cpu_op":
        if b.cpu is not None:
            b.cpu.op(name, ts, dur, tid)
        return
    args = a if isinstance(a := ev.get("args"), dict) else {}
    corr = args.get("correlation", -1)
    corr = corr if isinstance(corr, int) else -1
    if what == "kernel":
        grid = args.get("grid")
        blocks = -1
        if isinstance(grid, list) and grid and all(isinstance(g, int) for g in grid):
            blocks = 1
            for g in grid:
                blocks *= g
        stream = args.get("stream", -1)
        b.op(KIND_KERNEL, name, ts, dur, blocks, stream if isinstance(stream, int) else -1, corr)
        dev = args.get("device")
        if isinstance(dev, int):
            b.kernel_devices[dev] = b.kernel_devices.get(dev, 0) + 1
    elif what in ("memcpy", "memset"):
        kind = KIND_MEMCPY if what == "memcpy" else KIND_MEMSET
        stream = args.get("stream", -1)
        b.op(kind, name, ts, dur, -1, stream if isinstance(stream, int) else -1, corr)
    elif what == "launch":
        b.launch(name, ts, dur, corr)
    else:
        where = "gpu" if what == "gpu_range" else "cpu"
        b.ranges.append(GpuRange(name, ts, ts + dur, where, tid))


def _devices(header: Any) -> dict[int, tuple[int, str]]:
    out: dict[int, tuple[int, str]] = {}
    props = header.get("deviceProperties") if isinstance(header, dict) else None
    for d in props if isinstance(props, list) else []:
        sms, dev = (d.get("numSms"), d.get("id", 0)) if isinstance(d, dict) else (None, None)
        if isinstance(sms, int) and isinstance(dev, int):
            out[dev] = (sms, str(d.get("name", "")))
    return out


# ------------------------------------------------------------------------------ fast path


def _fast(path: Path, b: TraceBuilder) -> None:
    read = _reader(path, fh := _open(path))
    try:
        buf = b""
        while b'"traceEvents"' not in buf:
            chunk = read(BLOCK)
            if not chunk or len(buf) > 8 * BLOCK:
                raise _Fallback
            buf += chunk
        k = buf.index(b'"traceEvents"')
        m = re.compile(rb'"traceEvents"\s*:\s*\[\s*').match(buf, k)
        if m is None:
            raise _Fallback
        head = buf[:k].rstrip()
        head = head[:-1] if head.endswith(b",") else head
        try:
            header = json.loads(head + b"}")
        except ValueError:
            raise _Fallback from None
        devices = _devices(header)
        _keep_meta(b, header)
        rest = buf[m.end() :]
        if rest.startswith(b"]"):
            tail = rest
        else:
            if not rest.startswith(b"{"):
                raise _Fallback
            tail = _fast_events(read, rest[1:], b, devices)
        _fast_tail(tail, b, devices, header)
        b.devices.update(devices)
    finally:
        fh.close()


def _fast_events(
    read: Callable[[int], bytes], buf: bytes, b: TraceBuilder, devices: dict[int, tuple[int, str]]
) -> bytes:
    """Consume events up to the last one; returns the text from the last event's body on.

    Each wanted event is decoded in place (``scan_once`` at its ``{``) and must end exactly
    where the next separator begins, else the layout is not Kineto's and we fall back."""
    n_sep, sep = len(SEP), SEP.decode()
    scan: Any = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
    find_wanted = (_WANTED_CPU if b.cpu is not None else _WANTED_S).finditer
    take = _take
    while True:
        chunk = read(BLOCK)
        if not chunk:
            return buf
        buf += chunk
        last = buf.rfind(SEP)
        if last < 0:
            if len(buf) > 8 * BLOCK:
                raise _Fallback
            continue
        try:
            region = "  {" + buf[:last].decode("utf-8") + "\n  }"
        except UnicodeDecodeError:
            raise _Fallback from None
        buf = buf[last + n_sep :]
        done = -1
        for m in find_wanted(region):
            p = m.start()
            if p < done:
                continue
            s = region.rfind(sep, 0, p)
            s = 2 if s < 0 else s + n_sep - 1
            e = region.find(sep, p)
            e = len(region) if e < 0 else e + 4
            done = e
            try:
                ev, end = scan(region, s)
            except (StopIteration, ValueError):
                raise _Fallback from None
            if end != e:
                raise _Fallback
            take(b, ev, devices)


def _fast_tail(tail: bytes, b: TraceBuilder, devices: dict[int, tuple[int, str]], hdr: Any) -> None:
    """The last event, ``]``, and the rest of the top-level object (e.g. ``traceName``)."""
    end = len(tail)
    for _ in range(4):
        idx = tail.rfind(b"]", 0, end)
        if idx < 0:
            break
        end = idx
        before, after = tail[:idx].rstrip(), tail[idx + 1 :].strip()
        if not after.endswith(b"}"):
            continue
        try:
            rest = (
                json.loads(b"{" + after[1:])
                if after.startswith(b",")
                else json.loads(after[:-1] + b"{}")
            )
        except ValueError:
            continue
        if isinstance(rest, dict) and "deviceProperties" in rest and not devices:
            devices.update(_devices(rest))
        _keep_meta(b, rest)
        if before == b"":
            return
        if not before.endswith(b"}"):
            continue
        try:
            ev = json.loads(b"{" + before)
        except ValueError:
            continue
        for piece in [ev] if isinstance(ev, dict) else []:
            _take(b, piece, devices)
        return
    raise _Fallback


# --------------------------------------------------------------------------- general path


def _general(path: Path, b: TraceBuilder) -> None:
    fh = _open(path)
    try:
        w = Window(path, _reader(path, fh))
        dec = json.JSONDecoder()
        w.expect("{", "'{' (a Chrome trace is a JSON object)")
        devices: dict[int, tuple[int, str]] = {}
        seen_events = False
        if w.skip_ws() == "}":
            w.pos += 1
        else:
            while True:
                key = w.value(dec)
                if not isinstance(key, str):
                    w._fail(w.pos, "expected a key string")
                w.expect(":", "':'")
                if key == "traceEvents" and w.skip_ws() == "[":
                    seen_events = True
                    w.pos += 1
                    for ev in _array(w, dec):
                        _take(b, ev, devices)
                else:
                    val = w.value(dec)
                    if key == "deviceProperties":
                        devices.update(_devices({"deviceProperties": val}))
                    _keep_meta(b, {key: val})
                if w.expect(",}", "',' or '}'") == "}":
                    break
        b.devices.update(devices)
        if w.skip_ws() != "":
            w._fail(w.pos, "extra data after the top-level object")
        if not seen_events:
            raise TraceError(f"{path}: no 'traceEvents' array: not a Chrome/Kineto trace")
    finally:
        fh.close()


def _array(w: Window, dec: json.JSONDecoder) -> Iterator[Any]:
    if w.skip_ws() == "]":
        w.pos += 1
        return
    while True:
        yield w.value(dec)
        if w.expect(",]", "',' or ']'") == "]":
            return


def _keep_meta(b: TraceBuilder, obj: Any) -> None:
    if isinstance(obj, dict):
        b.meta.update({k: obj[k] for k in _META_KEYS if k in obj})


def read_kineto(path: Path, *, cpu: bool = False) -> Trace:
    """Read a Kineto trace (``.json``/``.json.gz``, detected by content) in bounded memory.
    ``cpu``: keep the CPU operators (and only them, with the annotations) for CPU mode."""
    b = TraceBuilder(str(path), "kineto", cpu=cpu)
    try:
        _fast(path, b)
    except _Fallback:
        b = TraceBuilder(str(path), "kineto", cpu=cpu)
        _general(path, b)
    return b.build()

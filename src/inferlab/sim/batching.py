"""The SIMULATED engine's continuous-batching loop: one decode loop serves every running sequence.

:class:`BatchingEngine` is a single item on the server's :class:`TimerWheel`, fired at each
step's end: every running sequence's chunk is due then, finished ones leave, queued ones join
(their prefill is part of the next step), and the next step's duration comes from the timing
model (:mod:`inferlab.sim.model`). It logs SGLang's ``Prefill batch`` / ``Decode batch`` lines
and serves SGLang's ``/metrics`` names, every line marked SIMULATED; while a capture runs
(:mod:`inferlab.sim.profiler`) each step is recorded.
"""

from __future__ import annotations

import json
import random
import time
from array import array
from collections import deque
from time import perf_counter_ns
from typing import TYPE_CHECKING

from inferlab.sim import api
from inferlab.sim.model import StepModel, accept_draw, step_ms
from inferlab.sim.prefixcache import PrefixCache
from inferlab.sim.wheel import Answer, TimerWheel, slot_of

if TYPE_CHECKING:
    from inferlab.sim.host import Client, SimHost
    from inferlab.sim.truth import Record as _Record
    from inferlab.sim.truth import Request as _Request

__all__ = ["BatchingEngine", "Seq", "log_prefix"]


class Seq(Answer):
    """One request in the batching model: queued, then running until its last token."""

    __slots__ = ("gen", "ids", "joined", "mid", "pos", "post", "pre", "reserved", "tail", "words")
    conn: Client

    def __init__(
        self,
        conn: Client,
        rec: _Record,
        gen: api.GenRequest,
        ids: list[int],
        words: list[bytes],
        pre: bytes,
        mid: bytes,
        tail: bytes,
    ) -> None:
        super().__init__(conn, rec)
        self.gen = gen
        self.ids = ids
        self.words = words
        self.pre = pre
        self.mid = mid
        self.post = mid + b"null}]}\n\n"
        self.tail = tail  # usage event + [DONE] + end of the chunked body
        self.pos = 0
        self.joined = False
        self.reserved = gen.prompt_tokens + gen.max_tokens

    def emit(self, n: int, due: int) -> bool:
        """Write the next ``n`` tokens (streaming) now; True when the answer is complete."""
        a = self.pos
        b = min(a + n, len(self.ids))
        self.pos = b
        last = b == len(self.ids)
        rec = self.rec
        if rec.stream:
            text = b"".join([self.words[i] for i in self.ids[a:b]])
            if last:
                event = b'%s%s%s"length"}]}\n\n' % (self.pre, text, self.mid)
                frame = b"%x\r\n%s\r\n%s" % (len(event), event, self.tail)
            else:
                event = b"%s%s%s" % (self.pre, text, self.post)
                frame = b"%x\r\n%s\r\n" % (len(event), event)
            rec.dues.append(due)
            rec.ntokens.append(b - a)
            rec.writes.append(perf_counter_ns())
            self.write(frame)
        elif last:
            rec.dues.append(due)
            rec.ntokens.append(b)
            rec.writes.append(perf_counter_ns())
            self.write(self.tail)
        return last


class BatchingEngine:
    """The continuous-batching decode loop: one :class:`TimerWheel` item, fired at step ends."""

    def __init__(self, srv: SimHost, model: StepModel, wheel: TimerWheel) -> None:
        cfg = srv.config
        self.srv = srv
        self.model = model
        self.wheel = wheel
        self.scale_ns = cfg.time_scale * cfg.launch_factor * 1e6  # sim.launchspread
        self.interval = cfg.decode_log_interval
        self.log = srv.log
        self.rng = random.Random(cfg.seed)
        self.queue: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.busy = False
        self.step_end = 0
        self.kv_reserved = 0
        self.spec = model.spec
        # counters (Prometheus) and the current log interval
        self.gen_total = 0
        self.prompt_total = 0
        self.requests_total = 0
        self.decode_steps = 0
        self.iv_tokens = 0
        self.iv_seq_steps = 0
        self.iv_accepted = 0
        self.iv_start = 0
        self.gen_throughput = 0.0
        self.accept_length = 1.0 if self.spec is not None else 0.0
        self.cuda_graph = True
        self.cache = PrefixCache(model.kv_tokens) if cfg.prefix_cache else None
        self.cached_total = 0  # prompt tokens served from the cache
        self.cache_hit_rate = 0.0  # of the last prefill batch (SGLang's gauge)

    # -- requests ----------------------------------------------------------------------------

    def submit(
        self, conn: Client, req: _Request, rec: _Record, gen: api.GenRequest, ids: list[int]
    ) -> None:
        srv = self.srv
        if gen.prompt_tokens + gen.max_tokens > self.model.kv_tokens:
            body = api.error_body(
                400,
                f"prompt + max_tokens ({gen.prompt_tokens + gen.max_tokens}) exceed the "
                f"SIMULATED KV cache ({self.model.kv_tokens} tokens)",
                "BadRequestError",
            )
            srv.fail(conn, rec, 400, body)
            return
        created = int(time.time())
        rec.completion_tokens = gen.max_tokens
        rec.dues = array("q")
        rec.ntokens = array("q")
        assert conn.transport is not None
        head = srv.heads.answer_head(gen.stream, req.keep_alive)
        if gen.stream:
            parts = api.stream_parts(gen, rec.id, created, srv.model_json)
            pre, mid, tail = parts.pre, parts.mid, parts.tail
            conn.transport.write(head + parts.role)
        else:
            out = api.render(gen, rec.id, created, srv.model_json, srv.words, ids, 1, head)
            pre = mid = b""
            tail = out.frames[0]
        seq = Seq(conn, rec, gen, ids, srv.words, pre, mid, tail)
        conn.job = seq
        self.queue.append(seq)
        if not self.busy:
            slot = self._step(perf_counter_ns())
            if slot >= 0:
                self.wheel.add(self, slot)

    # -- the loop ----------------------------------------------------------------------------

    def _admit(self) -> int:
        """Move queued requests into the batch (FIFO); returns the prompt tokens they prefill
        (without the ones the prefix cache serves)."""
        m = self.model
        joining = cached = 0
        queue = self.queue
        while queue:
            seq = queue[0]
            if seq.dead:
                queue.popleft()
                continue
            if len(self.running) >= m.max_running:
                break
            if self.kv_reserved + seq.reserved > m.kv_tokens:
                break
            queue.popleft()
            seq.joined = True
            self.kv_reserved += seq.reserved
            self.running.append(seq)
            if self.cache is None:
                joining += seq.gen.prompt_tokens
            else:
                hit = self.cache.lookup(seq.gen.prompt_text.split())
                joining, cached = joining + hit.computed, cached + hit.cached
            self.prompt_total += seq.gen.prompt_tokens
        if joining or cached:
            self.cached_total += cached
            self.cache_hit_rate = cached / (cached + joining)
        if (joining or cached) and self.log is not None:
            new = sum(1 for s in self.running if s.joined)
            self.log(
                f"{log_prefix()} Prefill batch. #new-seq: {new}, #new-token: {joining}, "
                f"#cached-token: {cached}, token usage: {self._usage():.2f}, "
                f"#running-req: {len(self.running) - new}, #queue-req: {len(queue)}, "
            )
        return joining

    def _step(self, start: int) -> int:
        """Begin a step at ``start`` (ns); returns the wheel slot of its end, or -1 if idle."""
        joining = self._admit()
        if not self.running:
            self.busy = False
            return -1
        self.busy = True
        dur = step_ms(self.model, len(self.running), joining)
        prof = self.srv.profiler
        if prof is not None and prof.active:
            new = sum(1 for s in self.running if s.joined)
            if prof.record(start, len(self.running), joining, new):
                self.srv.profile_steps_done()
        self.cuda_graph = len(self.running) <= self.model.cuda_graph_max_bs
        self.step_end = start + round(dur * self.scale_ns)
        return slot_of(self.step_end)

    def fire(self) -> int:
        due = self.step_end
        spec = self.spec
        keep: list[Seq] = []
        decoding = 0
        accepted = 0
        emitted = 0
        for seq in self.running:
            if seq.dead:
                self.kv_reserved -= seq.reserved
                continue
            if seq.joined:  # its prefill's token
                seq.joined = False
                n = 1
            elif spec is not None:
                acc = accept_draw(self.rng, spec.draft_tokens, spec.accept_prob)
                accepted += acc
                decoding += 1
                n = 1 + acc
            else:
                decoding += 1
                n = 1
            before = seq.pos
            done = seq.emit(n, due)
            emitted += seq.pos - before
            if done:
                self.kv_reserved -= seq.reserved
                self.requests_total += 1
                if self.cache is not None:
                    vocab = self.srv.tokenizer.vocab
                    self.cache.insert(seq.gen.prompt_text.split() + [vocab[i] for i in seq.ids])
                seq.conn.job_done(seq)
            else:
                keep.append(seq)
        self.running = keep
        self.gen_total += emitted
        if decoding:
            self.decode_steps += 1
            self.iv_tokens += emitted
            self.iv_seq_steps += decoding
            self.iv_accepted += accepted
            if self.decode_steps % self.interval == 0:
                self._log_decode(due, keep)
        slot = self._step(due)
        if slot < 0:
            self.iv_start = 0
        return slot

    def _usage(self) -> float:
        used = sum(s.gen.prompt_tokens + s.pos for s in self.running)
        return used / self.model.kv_tokens

    def _log_decode(self, now: int, running: list[Seq]) -> None:
        start = self.iv_start
        if start and now > start:
            self.gen_throughput = self.iv_tokens / ((now - start) / 1e9)
        spec = self.spec
        if spec is not None and self.iv_seq_steps:
            self.accept_length = 1.0 + self.iv_accepted / self.iv_seq_steps
        if self.log is not None:
            used = sum(s.gen.prompt_tokens + s.pos for s in running)
            parts = [
                f"{log_prefix()} Decode batch. #running-req: {len(running)}",
                f"#token: {used}",
                f"token usage: {used / self.model.kv_tokens:.2f}",
            ]
            if spec is not None:
                rate = (self.accept_length - 1.0) / spec.draft_tokens
                parts += [f"accept len: {self.accept_length:.2f}", f"accept rate: {rate:.2f}"]
            parts += [
                f"cuda graph: {self.cuda_graph}",
                f"gen throughput (token/s): {self.gen_throughput:.2f}",
                f"#queue-req: {len(self.queue)}, ",
            ]
            self.log(", ".join(parts))
        self.iv_start = now
        self.iv_tokens = self.iv_seq_steps = self.iv_accepted = 0

    def metrics_text(self) -> str:
        """Prometheus text with SGLang's metric names; every HELP says SIMULATED."""
        label = "{model_name=" + json.dumps(self.srv.config.model) + "}"
        used = sum(s.gen.prompt_tokens + s.pos for s in self.running)
        rows: list[tuple[str, str, str, float]] = [
            ("sglang:num_running_reqs", "gauge", "Running requests", len(self.running)),
            ("sglang:num_queue_reqs", "gauge", "Queued requests", len(self.queue)),
            ("sglang:num_used_tokens", "gauge", "KV-cache tokens in use", used),
            ("sglang:max_total_num_tokens", "gauge", "KV-cache capacity", self.model.kv_tokens),
            ("sglang:token_usage", "gauge", "KV-cache usage", used / self.model.kv_tokens),
            ("sglang:gen_throughput", "gauge", "Generation throughput", self.gen_throughput),
            ("sglang:cache_hit_rate", "gauge", "Prefix-cache hit rate", self.cache_hit_rate),
        ]
        if self.spec is not None:
            rows.append(("sglang:spec_accept_length", "gauge", "Accept length", self.accept_length))
            rate = (self.accept_length - 1.0) / self.spec.draft_tokens
            rows.append(("sglang:spec_accept_rate", "gauge", "Accept rate", rate))
        rows += [
            ("sglang:prompt_tokens_total", "counter", "Prefill tokens", self.prompt_total),
            ("sglang:generation_tokens_total", "counter", "Generated tokens", self.gen_total),
            ("sglang:num_requests_total", "counter", "Finished requests", self.requests_total),
            ("sglang:cached_tokens_total", "counter", "Cached prompt tokens", self.cached_total),
        ]
        out = [f"# inferlab sim (SIMULATED engine), preset {self.srv.config.preset or 'generic'}"]
        for name, kind, help_, value in rows:
            base = name[: -len("_total")] if kind == "counter" else name
            out.append(f"# HELP {base} {help_} (SIMULATED by inferlab sim).")
            out.append(f"# TYPE {base} {kind}")
            out.append(f"{name}{label} {float(value)!r}")
        return "\n".join(out) + "\n"


def log_prefix() -> str:
    """``[SIMULATED] [YYYY-mm-dd HH:MM:SS TP0]``: SGLang's prefix, marked as simulated."""
    return "[SIMULATED] [" + time.strftime("%Y-%m-%d %H:%M:%S") + " TP0]"

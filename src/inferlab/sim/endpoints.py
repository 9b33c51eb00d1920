"""The reference engine's endpoints other than generation: health, model card, tokenize,
ground truth, metrics and SGLang's profiling pair. Each is ``handler(host, conn, request)``
(:class:`~inferlab.sim.host.SimHost`, :class:`~inferlab.sim.host.Client`)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab import __version__
from inferlab.sim import api
from inferlab.sim.batching import log_prefix
from inferlab.sim.profiler import ProfileRequestError
from inferlab.sim.startup import server_args

if TYPE_CHECKING:
    from inferlab.sim.host import Client, SimHost
    from inferlab.sim.truth import Request

__all__ = ["ROUTES", "Handler", "profile_steps_done"]

Handler = Callable[["SimHost", "Client", "Request"], None]
_PROMETHEUS = b"text/plain; version=0.0.4; charset=utf-8"


def _health(srv: SimHost, conn: Client, req: Request) -> None:
    conn.respond(200, b"")


def _version(srv: SimHost, conn: Client, req: Request) -> None:
    body = {"version": __version__, "engine": "inferlab-sim", "simulated": True}
    conn.respond(200, json.dumps(body).encode())


def _server_info(srv: SimHost, conn: Client, req: Request) -> None:
    body = {**server_args(srv.config), "version": __version__, "simulated": True}
    conn.respond(200, json.dumps(body).encode())


def _models(srv: SimHost, conn: Client, req: Request) -> None:
    card = {
        "id": srv.config.model,
        "object": "model",
        "created": int(time.time()),
        "owned_by": "inferlab-sim",
        "root": srv.config.model,
        "parent": None,
        "max_model_len": srv.config.max_model_len,
        "permission": [],
    }
    conn.respond(200, json.dumps({"object": "list", "data": [card]}).encode())


def _tokenize(srv: SimHost, conn: Client, req: Request) -> None:
    obj = api.load_object(req.body)
    if not isinstance(obj, api.ApiError):
        model = obj.get("model")
        if model is not None and model != srv.config.model:
            obj = api.not_found_model(str(model))
    out = (
        obj
        if isinstance(obj, api.ApiError)
        else api.parse_tokenize(obj, srv.config.max_model_len, srv.tokenizer)
    )
    if isinstance(out, api.ApiError):
        conn.respond(out.status, out.body())
    else:
        conn.respond(200, out)


def _truth_get(srv: SimHost, conn: Client, req: Request) -> None:
    body = "".join(json.dumps(r) + "\n" for r in srv.truth()).encode()
    conn.respond(200, body, b"application/x-ndjson")


def _truth_summary(srv: SimHost, conn: Client, req: Request) -> None:
    conn.respond(200, json.dumps(srv.lateness_summary()).encode())


def _truth_delete(srv: SimHost, conn: Client, req: Request) -> None:
    srv.clear_truth()
    conn.respond(200, b"{}")


def _metrics(srv: SimHost, conn: Client, req: Request) -> None:
    body = srv.batching_metrics()
    if body is None:
        body = (
            "# inferlab sim (SIMULATED engine), fixed-timing mode: no batching model\n"
            "# HELP sglang:num_requests_total Finished requests (SIMULATED).\n"
            "# TYPE sglang:num_requests_total counter\n"
            f"sglang:num_requests_total {srv.generations}\n"
        )
    conn.respond(200, body.encode(), _PROMETHEUS)


# -- profiling (SGLang's endpoints; :mod:`inferlab.sim.profiler`) ------------------------------


def _start_profile(srv: SimHost, conn: Client, req: Request) -> None:
    prof = srv.profiler
    obj = api.load_object(req.body) if req.body.strip() else {}
    if prof is None or isinstance(obj, api.ApiError):
        msg = "profiling needs --preset or --model-mode batching (SIMULATED steps)"
        err = obj if isinstance(obj, api.ApiError) else api.ApiError(400, msg)
        conn.respond(err.status, err.body())
        return
    try:
        cap = prof.start(obj)
    except ProfileRequestError as exc:
        conn.respond(400, api.error_body(400, str(exc), "BadRequestError"))
        return
    if srv.log is not None:
        srv.log(
            f"{log_prefix()} Profiling starts. Traces will be saved to: {cap.out_dir} "
            f"(with profile id: {cap.profile_id})"
        )
    conn.respond(200, b"Start profiling. (SIMULATED)\n", b"text/plain; charset=utf-8")


def _stop_profile(srv: SimHost, conn: Client, req: Request) -> None:
    prof = srv.profiler
    try:
        if prof is None:
            raise ProfileRequestError("profiling needs --preset or --model-mode batching")
        cap = prof.stop()
    except ProfileRequestError as exc:
        conn.respond(400, api.error_body(400, str(exc), "BadRequestError"))
        return
    fut = asyncio.get_running_loop().run_in_executor(None, prof.write, cap)

    def done(f: asyncio.Future[list[Path]]) -> None:
        _profile_written(srv, f, cap.out_dir)
        if not conn.closed:
            ok = f.exception() is None
            conn.respond(200 if ok else 500, b"Stop profiling. (SIMULATED)\n" if ok else b"")

    fut.add_done_callback(done)


def _profile_written(srv: SimHost, f: asyncio.Future[list[Path]], out: Path) -> None:
    if srv.log is None:
        return
    exc = f.exception()
    if exc is not None:
        srv.log(f"{log_prefix()} Profiling failed: cannot write traces to {out}: {exc}")
    else:
        srv.log(f"{log_prefix()} Profiling done. Traces are saved to: {out}")


def profile_steps_done(srv: SimHost) -> None:
    """``num_steps`` reached: stop and write, answering nobody (as SGLang does)."""
    prof = srv.profiler
    assert prof is not None
    cap = prof.stop()
    fut = asyncio.get_running_loop().run_in_executor(None, prof.write, cap)
    fut.add_done_callback(lambda f: _profile_written(srv, f, cap.out_dir))


#: path → method → handler (generation's two paths are the server's own)
ROUTES: dict[str, dict[str, Handler]] = {
    "/health": {"GET": _health},
    "/version": {"GET": _version},
    "/get_server_info": {"GET": _server_info},
    "/v1/models": {"GET": _models},
    "/tokenize": {"POST": _tokenize},
    "/truth": {"GET": _truth_get, "DELETE": _truth_delete},
    "/truth/summary": {"GET": _truth_summary},
    "/metrics": {"GET": _metrics},
    "/start_profile": {"POST": _start_profile},
    "/stop_profile": {"POST": _stop_profile},
}

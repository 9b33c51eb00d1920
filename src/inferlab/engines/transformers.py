"""Hugging Face ``transformers serve`` (transformers 5.x, ``transformers/cli/serve.py``).

What its source (5.17.0) and real logs say, and what inferlab does about it:

- Launch: ``transformers serve MODEL --host H --port P`` (default, "cli"); the model is the
  positional ``FORCE_MODEL`` argument, preloaded before uvicorn starts, so ``/health`` answering
  200 means the weights are on the device. ``python -m transformers.cli.transformers serve ...``
  ("module") runs it from a given interpreter. Set ``HF_HUB_DISABLE_UPDATE_CHECK=1`` where there
  is no network (the CLI asks PyPI for a newer version at start).
- Flags are click booleans with negations (``--continuous-batching`` /
  ``--no-continuous-batching``, ``--cb-use-cuda-graph`` / ``--no-cb-use-cuda-graph``) and
  ``--attn-implementation`` (eager, sdpa, flash_attention_2/3, flex_attention), ``--dtype``,
  ``--device``, ``--cb-block-size``, ``--cb-num-blocks``, ``--cb-max-batch-tokens``,
  ``--cb-max-memory-percent`` (the share of *free* GPU memory the paged KV cache takes, default
  0.9), ``--log-level`` (default warning; uvicorn always logs at info).
- Endpoints: ``/health`` (503 ``cb_worker_dead`` once the continuous-batching worker died),
  ``/v1/models`` (lists the hub cache, not the forced model: empty or a 500 without a hub cache
  directory, so inferlab falls back to the configured model, which is what the server is pinned
  to), ``/v1/completions``, ``/v1/chat/completions``. No ``/tokenize``, ``/version``, ``/metrics``.
- Requests: every field outside the OpenAI schema is refused with 422 ``Unexpected fields in the
  request`` — ``ignore_eos`` and ``min_tokens`` included (that was the 422 of ``inferlab verify``
  with its default ``--engine vllm``). So the output length is exact only for models that never
  emit an end-of-sequence token, such as ``inferlab model tiny`` / ``random``; the verify length
  check says when it is not. ``stream_options`` is ignored, but usage is sent anyway in the last
  chunk (finish_reason set, no ``[DONE]``). A request body must be ``application/json``.
- Continuous batching allocates its KV cache at the first request, not at launch: a CUDA OOM
  there (or in a big packed prefill) kills the batching worker, fails the requests in flight
  with an ``{"error": ...}`` SSE event and every later one with 503.
"""

from inferlab.engines import common
from inferlab.engines.base import OPENAI_ONLY, PYTHON, EngineSpec, Launcher, register
from inferlab.engines.evidence import EffectEvidence, Evidence
from inferlab.engines.facts import ReconFacts
from inferlab.engines.flags import FlagSyntax
from inferlab.engines.logs import fatal_sig, generic_fatal, sig

_FIX = "tests/fixtures/transformers/"

_OOM_REMEDY = (
    "with --continuous-batching the paged KV cache takes --cb-max-memory-percent of the free GPU "
    "memory (default 0.9) at the first request and activations must fit in the rest: lower "
    "--cb-max-memory-percent, or size the cache with --cb-num-blocks / --cb-max-batch-tokens; "
    "prefer --attn-implementation sdpa to eager (eager materializes the attention scores of a "
    "whole packed batch); without continuous batching: fewer concurrent requests, a shorter "
    "context or a smaller --dtype"
)

SIGNATURES = (
    sig(
        "ready",
        r"Uvicorn running on",
        "info",
        ready=True,
        # "Application startup complete" comes before the port is bound (see port-in-use log)
        source=_FIX + "transformers-5.17.0_tiny-cpu_serve-verify-422.log",
    ),
    common.cuda_oom(
        _OOM_REMEDY,
        ("--cb-max-memory-percent", "--cb-num-blocks", "--cb-max-batch-tokens"),
    ),
    fatal_sig(
        "cb_cache_too_large",
        r"Memory footprint \d+ is more than available memory \d+|No positive solution \(root =",
        remedy="the continuous-batching cache asked for (--cb-num-blocks × --cb-block-size, "
        "--cb-max-batch-tokens) does not fit in --cb-max-memory-percent of the free memory: "
        "lower them or leave them unset (inferred from memory)",
        flags=("--cb-num-blocks", "--cb-max-batch-tokens", "--cb-max-memory-percent"),
        source=_FIX + "transformers-5.17.0_tiny-cpu_cb-worker-dead.log; "
        "generation/continuous_batching/cache.py messages",
    ),
    generic_fatal(
        "cb_worker_dead",
        r"Error in generation loop:|CB worker is dead|CB worker died",
        remedy="the continuous-batching worker died (root cause on the same line or above): "
        "every later request gets 503 until the server is restarted",
        source=_FIX + "transformers-5.17.0_tiny-cpu_cb-worker-dead.log",
    ),
    fatal_sig(
        "accelerate_missing",
        r"requires `accelerate`",
        remedy="transformers serve places the model with a device_map: pip install accelerate "
        "in the engine's Python",
        source=_FIX + "transformers-5.17.0_tiny-cpu_no-accelerate.log",
    ),
    fatal_sig(
        "serve_deps_missing",
        r"Missing dependencies for serving",
        remedy="pip install 'transformers[serving]' (fastapi, uvicorn, pydantic, openai) in the "
        "engine's Python",
        source="transformers/cli/serve.py message (no fixture log)",
    ),
    fatal_sig(
        "bad_attn_implementation",
        r"Unsupported attention implementation: ",
        remedy="--attn-implementation takes eager, sdpa, flash_attention_2, flash_attention_3, "
        "flex_attention or a hub kernel (kernels-community/...)",
        flags=("--attn-implementation",),
        source=_FIX + "transformers-5.17.0_bad-attn-implementation.log",
    ),
    fatal_sig(
        "bad_dtype",
        r"Unsupported dtype: ",
        remedy="--dtype takes auto or a torch dtype name (bfloat16, float16, float32)",
        flags=("--dtype",),
        source="transformers/cli/serving/model_manager.py message (no fixture log)",
    ),
    common.address_in_use(
        "another process holds the port: stop it or choose another [engine] port",
    ),
    common.hf_model_not_found(
        "the model path or Hugging Face repo id does not resolve: a local model must be an "
        "existing directory with config.json (a path that does not exist is read as a repo "
        "id); offline (HF_HUB_OFFLINE=1) a repo id must already be in the hub cache",
    ),
    sig(
        "request_rejected",
        r'"POST /v1/\S+ HTTP/1\.1" 422',
        "warning",
        remedy="transformers serve refuses request fields outside the OpenAI schema (ignore_eos, "
        "min_tokens) with 422: use engine kind transformers (inferlab then sends none), or "
        "--engine transformers for inferlab bench / verify",
        source=_FIX + "transformers-5.17.0_tiny-cpu_serve-verify-422.log",
    ),
    sig(
        "continuous_batching",
        r"\[Request received\] Model: .*, CB: True",
        "info",
        remedy="the request ran on the continuous-batching path (--continuous-batching applied)",
        source=_FIX + "transformers-5.17.0_tiny-cpu_cb-small-cache.log",
    ),
    sig(
        "sequential_generation",
        r"\[Request received\] Model: .*, CB: False",
        "info",
        remedy="the request ran model.generate() on one inference thread: concurrent requests "
        "are served one after another",
        source=_FIX + "transformers-5.17.0_tiny-cpu_serve-verify-422.log",
    ),
    sig(
        "cuda_graphs_off",
        r"use_cuda_graph = True but torch\.cuda\.is_available\(\) = False: turning off cuda graphs",
        "warning",
        remedy="--cb-use-cuda-graph needs a CUDA device: the lever is not applied here",
        flags=("--cb-use-cuda-graph",),
        source=_FIX + "transformers-5.17.0_tiny-cpu_cb-small-cache.log",
    ),
)

SPEC = register(
    EngineSpec(
        name="transformers",
        description="Hugging Face transformers serve (OpenAI-compatible)",
        **OPENAI_ONLY,
        launchers=(
            Launcher("cli", ("transformers", "serve"), model_flag=""),
            Launcher(
                "module",
                (PYTHON, "-m", "transformers.cli.transformers", "serve"),
                model_flag="",
                note="from a given interpreter ([engine] python)",
            ),
        ),
        flag_syntax=FlagSyntax(),
        log_signatures=SIGNATURES,
        # it logs no args; each request says whether continuous batching served it
        evidence=Evidence(
            effects=(
                EffectEvidence(
                    "--continuous-batching",
                    "continuous batching served the requests",
                    log=r"\[Request received\] .*CB: True",
                    log_against=r"\[Request received\] .*CB: False",
                ),
            )
        ),
        default_gpus=1,  # one device (``--device``); under ``run --ray``: [engine] gpus = N
        recon=ReconFacts(
            "transformers",
            # the `transformers` console script is the same app; the module runs from any Python
            help_argvs=(("-m", "transformers.cli.transformers", "serve", "--help"),),
            # its version is among the libraries recon reports for every engine
        ),
    )
)

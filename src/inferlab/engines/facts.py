"""What the layers above know of an engine, declared with its ``EngineSpec``: how recon reads it
(``ReconFacts``), where its tuned kernel configs come from (``Fp8Tuning``), which log formats
the log miner applies to it (``LogFacts``) and what to change when it runs out of memory
(``OomAdvice``). Pure data: the consumers (``recon``, ``tune``, ``logs``) look them up through
the registry and never branch on an engine's name.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fp8Tuning", "LogFacts", "OomAdvice", "ReconFacts"]


@dataclass(frozen=True)
class ReconFacts:
    """How ``inferlab recon`` inspects the engine installed in a Python: its import ``package``,
    the interpreter arguments that print its launch ``--help`` (tried in order), and the
    ``distributions`` whose versions recon reports for it. ``prefer``: when several engines are
    installed in one Python, recon inspects the one of highest ``prefer`` (then registry order);
    it also orders the engines recon names."""

    package: str
    help_argvs: tuple[tuple[str, ...], ...]
    distributions: tuple[str, ...] = ()
    prefer: int = 0


@dataclass(frozen=True)
class Fp8Tuning:
    """What ``inferlab tune fp8-gemm --engine NAME`` writes for the engine: W8A8 block-FP8 GEMM
    files named ``N=..,K=..,device_name=..,dtype=fp8_w8a8,block_shape=[128{block_sep}128].json``
    (the directory is the spec's ``fp8_gemm`` ``ConfigDir``), and ``default``: the Triton config
    (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_warps, num_stages) the engine
    runs when no tuned file exists."""

    block_sep: str
    default: tuple[int, int, int, int, int, int]

    def file_name(self, n: int, k: int, dev: str) -> str:
        """The file name for shape (N, K) on device ``dev`` (already underscored)."""
        block = f"[128{self.block_sep}128]"
        return f"N={n},K={k},device_name={dev},dtype=fp8_w8a8,block_shape={block}.json"


@dataclass(frozen=True)
class LogFacts:
    """How ``inferlab logs analyze`` reads the engine's logs.

    ``formats`` names the module of its line-format table (``FORMATS``, ``MARKERS`` and
    optionally ``ADVICE``, as in ``inferlab.logs.formats.vllm``): engines sit below the log
    miner, so the table is named here and imported there. ``display`` is the engine's name in
    findings; ``looked_for`` says what of it an unrecognised log was searched for;
    ``named_in_lines``: an engine-neutral line (kernel config, CUDA OOM, NCCL error) that holds
    the engine's name (a path such as ``.../vllm/...``) counts for it; ``stop_requested``: the
    line it writes when told to stop (a regex), after which its processes' deaths are the stop,
    not a fault (``EngineSpec.before_stop``)."""

    display: str
    formats: str
    looked_for: str
    named_in_lines: bool = False
    stop_requested: str | None = None


@dataclass(frozen=True)
class OomAdvice:
    """What to change when the engine runs out of memory during CUDA-graph capture.

    ``memory_flag`` is its memory-share flag as the log miner names it (``st.flags`` key, e.g.
    ``mem_fraction_static``; a ``flag`` format reads it: ``logs.formats.common.launch_flag``, in
    the common table or the engine's own), ``memory_cli`` its spelling on the command line;
    ``step`` how far below the logged value to suggest; ``capture_more`` what else to cap, after
    "lower it (e.g. X)"; ``capture_no_flag`` the whole advice when the log shows no memory flag."""

    memory_flag: str
    memory_cli: str
    step: float
    capture_more: str
    capture_no_flag: str

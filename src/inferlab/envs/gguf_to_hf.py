"""GGUF → Hugging Face model directory, through transformers' GGUF loader (which reads and
dequantizes with the ``gguf`` package): never a hand-written dequantizer.

Run by path in a Python that has torch, transformers and gguf (the cached vLLM CPU
environment), not imported by inferlab::

    python -I gguf_to_hf.py MODEL.gguf OUT_DIR float32|bfloat16 [EXTRA_SYS_PATH]

(EXTRA_SYS_PATH: a directory of packages the environment lacks, e.g. ``gguf``, put first on
``sys.path``.)

Writes ``model.safetensors``, ``config.json``, ``generation_config.json``, ``tokenizer.json``,
``tokenizer_config.json`` (with the GGUF's chat template) into OUT_DIR, and prints one JSON
line: the seconds each step took, the parameter count, the versions of the libraries used.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def convert(gguf: Path, out: Path, dtype_name: str) -> dict[str, Any]:
    """Load ``gguf`` with transformers (dequantized to ``dtype_name``) and save it to ``out``."""
    import gguf as gguf_lib  # type: ignore[import-not-found, unused-ignore]
    import torch
    import transformers  # type: ignore[import-not-found, unused-ignore]

    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype_name]
    t0 = time.monotonic()
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    t1 = time.monotonic()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=dtype
    )
    t2 = time.monotonic()
    template = _chat_template(gguf_lib, gguf)
    if template and not getattr(tok, "chat_template", None):
        tok.chat_template = template
    _as_plain(model, dtype)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    t3 = time.monotonic()
    return {
        "tokenizer_s": round(t1 - t0, 2),
        "load_s": round(t2 - t1, 2),
        "save_s": round(t3 - t2, 2),
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": dtype_name,
        "chat_template": bool(getattr(tok, "chat_template", None)),
        "transformers": transformers.__version__,
        "gguf": getattr(gguf_lib, "__version__", None) or _version("gguf"),
        "torch": torch.__version__,
    }


def _as_plain(model: Any, dtype: Any) -> None:
    """The loaded model as an unquantized one: the loader dequantized every weight, but
    leaves its GGUF quantizer attached (save_pretrained then refuses: "not serializable") and
    its quantization_config in the config (an engine would read the copy as GGUF)."""
    kinds = {(type(p).__name__, p.dtype) for p in model.parameters()}
    if kinds != {("Parameter", dtype)}:
        raise SystemExit(f"not a plain {dtype} model after loading: {sorted(map(str, kinds))}")
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if hasattr(model, "is_quantized"):
        model.is_quantized = False


def _chat_template(gguf_lib: Any, path: Path) -> str | None:
    """The GGUF's ``tokenizer.chat_template`` field, read with ``gguf.GGUFReader``."""
    field = gguf_lib.GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    if field is None:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("float32", "bfloat16"):
        sys.exit("usage: gguf_to_hf.py MODEL.gguf OUT_DIR float32|bfloat16 [EXTRA_SYS_PATH]")
    if len(sys.argv) == 5:
        sys.path.insert(0, sys.argv[4])
    print(json.dumps(convert(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])))

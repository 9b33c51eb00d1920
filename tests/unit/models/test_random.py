"""``inferlab model random``: real-size random Llama models, bfloat16 safetensors written with
numpy, deterministic whatever the thread count, never emitting a special or padding token."""

from __future__ import annotations

import hashlib
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inferlab.errors import ConfigError
from inferlab.models import PRESETS, RandomSpec, write_random_model
from inferlab.models.random import bf16_bytes
from inferlab.models.safetensors import read_header
from support.llama_ref import forward


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("random-test")
    write_random_model(out, "test", seed=0, workers=1)
    return out


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _load(d: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """config.json and the weights as float64 (bfloat16 decoded by hand: << 16)."""
    cfg = json.loads((d / "config.json").read_text())
    head, start = read_header(d / "model.safetensors")
    raw = (d / "model.safetensors").read_bytes()
    w = {}
    for name, info in head.items():
        b, e = info["data_offsets"]  # type: ignore[misc]
        assert info["dtype"] == "BF16"
        u16 = np.frombuffer(raw[start + b : start + e], dtype="<u2")
        f32 = (u16.astype(np.uint32) << 16).view(np.float32)
        w[name] = f32.reshape(info["shape"]).astype(np.float64)  # type: ignore[arg-type]
    return cfg, w


def test_files_config_and_header(model_dir: Path) -> None:
    assert sorted(p.name for p in model_dir.iterdir()) == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    cfg, w = _load(model_dir)
    spec = PRESETS["test"]
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["torch_dtype"] == "bfloat16"
    assert cfg["vocab_size"] == spec.vocab_size == 2048
    assert cfg["inferlab"]["generator"] == "inferlab.models.random"
    assert cfg["inferlab"]["tokenizer_vocab_size"] < cfg["vocab_size"]  # padded vocabulary
    head, start = read_header(model_dir / "model.safetensors")
    ends = sorted(tuple(v["data_offsets"]) for v in head.values())  # type: ignore[arg-type]
    assert ends[0][0] == 0 and all(a[1] == b[0] for a, b in pairwise(ends))  # contiguous
    assert (
        start % 8 == 0 and start + ends[-1][1] == (model_dir / "model.safetensors").stat().st_size
    )
    assert sum(a.size for a in w.values()) == spec.num_parameters
    assert w["model.embed_tokens.weight"].shape == (2048, 256)
    assert w["model.layers.1.self_attn.k_proj.weight"].shape == (2 * 32, 256)


def test_the_construction_holds_in_bfloat16(model_dir: Path) -> None:
    cfg, w = _load(model_dir)
    spec = PRESETS["test"]
    assert (w["model.embed_tokens.weight"][:, 0] == spec.anchor).all()
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        assert (w[p + "self_attn.o_proj.weight"][0] == 0).all()
        assert (w[p + "mlp.down_proj.weight"][0] == 0).all()
        assert (w[p + "input_layernorm.weight"] == 1).all()
    head = w["lm_head.weight"]
    padding = range(cfg["inferlab"]["tokenizer_vocab_size"], cfg["vocab_size"])
    assert (head[list(padding), 0] == -spec.forbid_scale).all()
    assert (head[list(padding), 1:] == 0).all()
    assert 0.5 < float(np.std(w["model.layers.0.mlp.up_proj.weight"])) * 16 < 2  # std 1/sqrt(256)


def test_greedy_never_emits_special_or_padding_tokens(model_dir: Path) -> None:
    from tokenizers import Tokenizer

    cfg, w = _load(model_dir)
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    allowed_below = cfg["inferlab"]["tokenizer_vocab_size"]
    special = {tok.token_to_id(t) for t in ("<s>", "</s>", "<unk>")}
    for prompt in ("Capital of France in one word?", "def fibonacci(n):", "!!!"):
        cache: list[list[np.ndarray]] = []
        logits = forward(cfg, w, tok.encode(prompt).ids, cache)
        out = []
        for _ in range(24):
            nxt = int(np.argmax(logits))
            assert nxt < allowed_below and nxt not in special, (prompt, out)
            assert logits[allowed_below:].max() < -50  # padding rows sit far below
            out.append(nxt)
            logits = forward(cfg, w, [nxt], cache)
        assert tok.decode(out).isprintable()


def test_deterministic_whatever_the_thread_count(tmp_path: Path, model_dir: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_random_model(a, "test", seed=0, workers=4)
    write_random_model(b, "test", seed=1, workers=1)
    assert _digest(a) == _digest(model_dir)
    assert _digest(b)["model.safetensors"] != _digest(a)["model.safetensors"]
    assert _digest(b)["tokenizer.json"] == _digest(a)["tokenizer.json"]


def test_float32_weights(tmp_path: Path, model_dir: Path) -> None:
    info = write_random_model(tmp_path / "f", "test", seed=0, dtype="float32")
    head, _ = read_header(tmp_path / "f" / "model.safetensors")
    assert {v["dtype"] for v in head.values()} == {"F32"}
    assert info.size_bytes > 1.9 * (model_dir / "model.safetensors").stat().st_size
    cfg = json.loads((tmp_path / "f" / "config.json").read_text())
    assert cfg["torch_dtype"] == "float32"


def test_bfloat16_rounds_to_nearest_even() -> None:
    x = np.array([1.0, 2.0, -400.0, 0.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9], dtype=np.float32)
    got = np.frombuffer(bf16_bytes(x), dtype="<u2")
    # 1+2^-8 is a tie between 1 and 1+2^-7: even (1.0); 1+3·2^-8 ties up to 1+2^-6 (even)
    want = [0x3F80, 0x4000, 0xC3C8, 0x0000, 0x3F80, 0x3F82, 0x3F80]
    assert got.tolist() == want


def test_preset_sizes() -> None:
    assert PRESETS["1b"].num_parameters == 1_107_363_840  # as written (2 214 744 520 bytes)
    assert 2.9e9 < PRESETS["3b"].num_parameters < 3.1e9
    assert 0.4e9 < PRESETS["0.5b"].num_parameters < 0.5e9
    for spec in PRESETS.values():
        spec.validate()


def test_bad_input_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--preset: unknown '2b'; expected one of test, 0.5b"):
        write_random_model(tmp_path / "x", "2b")
    with pytest.raises(ConfigError, match="--dtype: unknown 'float16'"):
        write_random_model(tmp_path / "x", "test", dtype="float16")
    with pytest.raises(ConfigError, match="multiple of num_attention_heads"):
        write_random_model(tmp_path / "x", spec=RandomSpec(100, 64, 1, 3, 1, 2048))
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="exists and is not a directory"):
        write_random_model(tmp_path / "file", "test")
